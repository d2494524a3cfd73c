"""Scoring: episode records and the paper's metrics (DTW, trace and EQA metrics), their aggregation with bootstrap intervals, pooled figures."""
