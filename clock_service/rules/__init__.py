"""Pure rules core of the frame: the strict call, the frame rules and the match. No I/O."""
