"""The int8 and int4 ladders the quantize stage drives (quantization), the judge of each candidate
(calibration_judge), and ``--int8 auto``'s choice among recipes (int8_choice)."""
