"""The one command (``pocketbert-convert CHECKPOINT --max-size … --recover …``): the levers planned and run inside
one budget (lever_run), its work folder of step checkpoints beside --out (lever_work), and what it refuses
before any training (lever_checks)."""
