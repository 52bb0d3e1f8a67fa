"""What a result is held to: each exported file computing what the PyTorch model computes (verify), and the
accuracy gate of the commands that change a checkpoint's accuracy (accuracy_gate), and int8 files held to the
dev gate of the task the checkpoint was trained on (dev_gate)."""
