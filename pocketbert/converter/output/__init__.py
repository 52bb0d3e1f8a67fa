"""What the converter writes and may replace: directories staged beside their destination and swapped in whole
(staging; what earlier runs left beside them: leftovers), what --overwrite may replace (owned), SIGTERM unwinding a
run (termination), and bundles cut for one target (cut)."""
