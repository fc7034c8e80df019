"""One module per `adrank` subcommand; each exposes `register(subparsers)`."""
