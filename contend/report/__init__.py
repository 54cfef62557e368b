"""The contention report of a `contend load` sweep: data, plots, rendering, and `build.build_report`."""
