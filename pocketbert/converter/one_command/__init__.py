"""The one command (``pocketbert-convert CHECKPOINT --max-size … --recover …``): the levers planned and run inside
one budget (lever_run), and its work folder of step checkpoints beside --out (lever_work)."""
