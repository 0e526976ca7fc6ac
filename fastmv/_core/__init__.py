"""Machinery shared by every solver: the driver, the result contract, validation, threads,
executors, preprocessing, linear algebra, and the private helpers of the public modules."""
