"""Benchmarks: rates printed as ratios to a baseline measured in the same run (`contend.benchmarks.rates`)."""
