"""The battery behind `contend check`: the framework, the protocols, and one module per family."""
