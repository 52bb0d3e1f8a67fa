"""The text a conversion reads and how it is fed: calibration and verification texts (texts), texts as the model's
named inputs (encoding), and the tokenizer files a bundle carries (tokenizer_files)."""
