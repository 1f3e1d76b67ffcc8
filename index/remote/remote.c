/* remote: see remote.h (being written). */
