"""How a checkpoint's weights are stored and put back at load: the int4 grid and int4 packing, the factored
word-embedding table, and the table and body a checkpoint takes from its base model."""
