/* dataset.c — pairs an images file with its labels file and checks that they
 * describe the same examples. */
#include "dataset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idx.h"

int dataset_load(const char *dir, const char *split, size_t limit, dataset *out, char *err,
                 size_t errlen)
{
    memset(out, 0, sizeof *out);
    char images_path[4096], labels_path[4096];
    snprintf(images_path, sizeof images_path, "%s/%s-images-idx3-ubyte.gz", dir, split);
    snprintf(labels_path, sizeof labels_path, "%s/%s-labels-idx1-ubyte.gz", dir, split);

    idx_array images, labels;
    if (idx_read_u8(images_path, 3, &images, err, errlen) != 0) return -1;
    if (idx_read_u8(labels_path, 1, &labels, err, errlen) != 0) {
        idx_free(&images);
        return -1;
    }
    if (images.dims[1] != 28 || images.dims[2] != 28) {
        snprintf(err, errlen, "%s: images are %ux%u; expected 28x28", images_path,
                 images.dims[1], images.dims[2]);
        goto fail;
    }
    if (images.dims[0] != labels.dims[0]) {
        snprintf(err, errlen, "%s has %u images but %s has %u labels", images_path,
                 images.dims[0], labels_path, labels.dims[0]);
        goto fail;
    }
    size_t n = images.dims[0];
    for (size_t i = 0; i < n; i++) {
        if (labels.data[i] >= DATASET_CLASSES) {
            snprintf(err, errlen, "%s: label %u of example %zu is out of range; expected 0 to %d",
                     labels_path, labels.data[i], i, DATASET_CLASSES - 1);
            goto fail;
        }
    }
    if (limit > n) {
        snprintf(err, errlen, "%zu %s examples requested but %s holds %zu", limit, split,
                 images_path, n);
        goto fail;
    }
    out->n = limit > 0 ? limit : n;
    out->images = images.data;
    out->labels = labels.data;
    return 0;
fail:
    idx_free(&images);
    idx_free(&labels);
    return -1;
}

void dataset_free(dataset *d)
{
    free(d->images);
    free(d->labels);
    memset(d, 0, sizeof *d);
}
