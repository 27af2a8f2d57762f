"""Windows: kernels whose loads overlap from one point of the output to the next (a pooling
window, a stencil), two ways. A sliding window walks rows and carries values from one row to the
next (`sliding` decides what a row carries, `sliding_emit` emits the row loop); a register window
computes a block of cells in one program so that the cells share their loads (`register` chooses
the block, `register_emit` emits it). The strategies they are chosen as are
`codegen.strategies.sliding_window` and `codegen.strategies.register_window`."""
