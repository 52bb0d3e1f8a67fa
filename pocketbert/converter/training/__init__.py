"""Training: a small generic loop (:mod:`.loop`), task fine-tuning (:mod:`.finetune`) and PyTorch
evaluation on task data (:mod:`.evaluate`).  Distillation (converter.distill) runs on the same loop."""
