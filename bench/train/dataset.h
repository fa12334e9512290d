/* dataset.h — a Fashion-MNIST split (or any MNIST-shaped one): 28x28 images
 * of unsigned bytes and labels 0..9, as shipped in IDX files. */
#ifndef TRAIN_DATASET_H
#define TRAIN_DATASET_H

#include <stddef.h>
#include <stdint.h>

enum { DATASET_PIXELS = 28 * 28, DATASET_CLASSES = 10 };

#define DATASET_DEFAULT_DIR "/usr/share/datasets/fashion-mnist"

typedef struct {
    size_t n;
    uint8_t *images; /* n * DATASET_PIXELS */
    uint8_t *labels; /* n, each < DATASET_CLASSES */
} dataset;

/* Loads DIR/SPLIT-images-idx3-ubyte.gz and DIR/SPLIT-labels-idx1-ubyte.gz
 * (SPLIT is "train" or "t10k"), keeping the first `limit` examples when
 * limit > 0. Returns 0, or -1 with the reason in err. */
int dataset_load(const char *dir, const char *split, size_t limit, dataset *out, char *err,
                 size_t errlen);

void dataset_free(dataset *d);

#endif
