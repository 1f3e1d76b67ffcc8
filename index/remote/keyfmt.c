/* keyfmt: see keyfmt.h (being written). */
