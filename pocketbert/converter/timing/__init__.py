"""How the converter times files and what the timings decide: alternating rounds and how sure a choice is
(candidate_timing), only once nothing else of the conversion runs (quiet_timing), no int8 file slower than fp32
(speed_rule), and a ladder's time limit (ladder_budget)."""
