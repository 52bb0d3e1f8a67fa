"""Training: a small generic loop (:mod:`.loop`), task fine-tuning (:mod:`.finetune`), PyTorch evaluation on
task data (:mod:`.evaluate`), distillation on the same loop (:mod:`.distill`), the recovery job around it
(:mod:`.recovery`) and the skeleton every checkpoint -> checkpoint command shares (:mod:`.checkpoint_job`)."""
