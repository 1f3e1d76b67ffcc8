/* config: see config.h (being written). */
