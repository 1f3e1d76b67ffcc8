/* fetch: see fetch.h (being written). */
