/* wire: see wire.h (being written). */
