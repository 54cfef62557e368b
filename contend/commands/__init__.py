"""One module per `contend` subcommand: argument handling and output, no logic of their own."""
