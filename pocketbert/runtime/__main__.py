from .cli import main
from .terminal import command_name

main(prog_name=command_name())
