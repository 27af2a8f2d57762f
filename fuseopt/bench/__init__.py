"""GPU benchmarking of generated kernels (`fuseopt bench`)."""
