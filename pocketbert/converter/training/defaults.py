"""Training defaults that command lines show in their help, kept free of torch so a benchmark's options load fast."""

# 13 minutes of training (about 15 with the dev scores) recovered a new NER corpus (WNUT-17) to 0.88 F1 of its
# teacher on 2 cores; the GLUE tasks and CoNLL-2003 needed less (docs/training.md, "How long recovery takes")
RECOVERY_BUDGET = "13m"
