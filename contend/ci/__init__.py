"""What a CI job reads besides the exit code: JUnit XML and the GitHub Actions step summary."""
