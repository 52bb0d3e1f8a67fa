"""The int8 and int4 ladders the quantize stage drives (quantization), the judge of each candidate file
(calibration_judge), and how ``--int8 auto``'s candidates are timed (candidate_timing)."""
