/*
 * Loops over the (destination, card) cells of a block of routing tables, compiled: the builder's
 * reachability (controller/routing/builder.py) and the analysis's follow (controller/analysis/follow.py).
 *
 * Each one is a loop that numpy can only express as several passes over the block (pointer doubling,
 * a sort by level, gathers, repeats, np.add.at); here it is one pass. The order of every floating-point
 * addition is the one follow.py documents (table order, a card's children in port order), so the
 * sums are bit for bit the same as an in-order running sum. Arrays come through the buffer protocol
 * (numpy arrays of the dtypes controller/kernels.py gives); every index read from an array is
 * checked before it is used.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A buffer of `count` items of `size` bytes, or an exception (ValueError). */
static int check_items(Py_buffer *view, Py_ssize_t size, Py_ssize_t count, const char *name)
{
    if (view->len != size * count) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes, expected %zd items of %zd bytes", name,
                     view->len, count, size);
        return -1;
    }
    return 0;
}

static PyObject *index_error(const char *what, long long value)
{
    PyErr_Format(PyExc_IndexError, "%s out of range: %lld", what, value);
    return NULL;
}

/*
 * reach(flags: bool[n] in/out, arrive: int32[n], card_of_link: int32[links], cards: int) -> None
 *
 * Marks every cell that packets get to from the cells already marked: a marked cell's packets go on
 * to the cell of the card at the far end of its egress link (arrive: that link id, -1 at a host), in
 * the same row (rows of `cards` cells), which card_of_link gives.
 */
static PyObject *reach(PyObject *self, PyObject *args)
{
    Py_buffer flags_view, arrive_view, card_view;
    Py_ssize_t cards;
    if (!PyArg_ParseTuple(args, "w*y*y*n", &flags_view, &arrive_view, &card_view, &cards))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = flags_view.len, links = card_view.len / 4;
    if (check_items(&arrive_view, 4, n, "arrive") || check_items(&card_view, 4, links, "card_of_link"))
        goto done;
    if (cards < 1 || n % cards) {
        PyErr_SetString(PyExc_ValueError, "reach: the cells are not rows of `cards`");
        goto done;
    }
    uint8_t *flags = flags_view.buf;
    const int32_t *arrive = arrive_view.buf, *card_of_link = card_view.buf;
    for (Py_ssize_t start = 0; start < n; start++) {
        if (!flags[start])
            continue;
        Py_ssize_t cell = start, row = start - start % cards; /* the chain stays in its row */
        for (;;) { /* on from a marked cell until a cell marked before or a host */
            int32_t link = arrive[cell];
            if (link < 0)
                break;
            if (link >= links || card_of_link[link] < 0 || card_of_link[link] >= cards) {
                result = index_error("a cell's arrival link (cell)", cell);
                goto done;
            }
            Py_ssize_t next = row + card_of_link[link];
            if (flags[next])
                break;
            flags[next] = 1;
            cell = next;
        }
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    PyBuffer_Release(&flags_view);
    PyBuffer_Release(&arrive_view);
    PyBuffer_Release(&card_view);
    return result;
}

/*
 * rest_links(value: int32[n], parent: int32[n], moving: bool[n], rest: int32[n] out) -> int
 *
 * rest[c] = value[c] + rest[parent[c]] if moving[c] else value[c]: the links (packed external << 16 |
 * internal) from each cell to delivery. Returns -1, or a cell on a loop of parent pointers.
 */
static PyObject *rest_links(PyObject *self, PyObject *args)
{
    Py_buffer value_view, parent_view, moving_view, rest_view;
    if (!PyArg_ParseTuple(args, "y*y*y*w*", &value_view, &parent_view, &moving_view, &rest_view))
        return NULL;
    PyObject *result = NULL;
    int8_t *mark = NULL;
    int32_t *stack = NULL;
    Py_ssize_t n = value_view.len / 4;
    if (check_items(&value_view, 4, n, "value") || check_items(&parent_view, 4, n, "parent")
        || check_items(&moving_view, 1, n, "moving") || check_items(&rest_view, 4, n, "rest"))
        goto done;
    const int32_t *value = value_view.buf, *parent = parent_view.buf;
    const uint8_t *moving = moving_view.buf;
    int32_t *rest = rest_view.buf;
    mark = calloc(n ? n : 1, 1); /* 0: not seen, 1: on the current chain, 2: done */
    stack = malloc((n ? n : 1) * sizeof(int32_t));
    if (!mark || !stack) {
        PyErr_NoMemory();
        goto done;
    }
    long long loop = -1;
    for (Py_ssize_t start = 0; start < n && loop < 0; start++) {
        Py_ssize_t depth = 0, cell = start;
        int32_t base = 0;
        for (;;) { /* up the chain to a cell already done, or to a cell that delivers */
            if (mark[cell] == 2) {
                base = rest[cell];
                break;
            }
            if (mark[cell] == 1) {
                loop = cell;
                break;
            }
            mark[cell] = 1;
            stack[depth++] = (int32_t)cell;
            if (!moving[cell])
                break;
            int32_t next = parent[cell];
            if (next < 0 || next >= n) {
                result = index_error("parent", next);
                goto done;
            }
            cell = next;
        }
        if (loop >= 0)
            break;
        while (depth) { /* back down, adding each cell's own links */
            cell = stack[--depth];
            base += value[cell];
            rest[cell] = base;
            mark[cell] = 2;
        }
    }
    result = PyLong_FromLongLong(loop);
done:
    free(mark);
    free(stack);
    PyBuffer_Release(&value_view);
    PyBuffer_Release(&parent_view);
    PyBuffer_Release(&moving_view);
    PyBuffer_Release(&rest_view);
    return result;
}

/* A cell's links to delivery, from rest_links's packed count (external << 16 | internal). */
static inline int32_t links_of(int32_t packed) { return (packed >> 16) + (packed & 0xffff); }

/*
 * card_loads(load: float64[n] in/out, parent: int32[n], moving: bool[n], rest: int32[n],
 *            arrive: int32[n], port_of_link: int32[links], row: int) -> None
 *
 * Adds each moving cell's load to its parent's, deepest cells first and within a depth by the port
 * they arrive on (then by cell): every cell's load is complete before it is added, and a card's
 * children are added to it in port order. `rest` is a cell's links to delivery as rest_links gives
 * them (a child has one more than its parent), `arrive` the link id its packets arrive on, whose
 * port `port_of_link` gives. The cells come in rows of `row` (a destination and class's cards), and
 * a cell's parent is in its row.
 */
static PyObject *card_loads(PyObject *self, PyObject *args)
{
    Py_buffer load_view, parent_view, moving_view, rest_view, arrive_view, port_view;
    Py_ssize_t row;
    if (!PyArg_ParseTuple(args, "w*y*y*y*y*y*n", &load_view, &parent_view, &moving_view, &rest_view,
                          &arrive_view, &port_view, &row))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t *start = NULL;
    int32_t *order = NULL, *key = NULL;
    Py_ssize_t n = load_view.len / 8;
    if (check_items(&load_view, 8, n, "load") || check_items(&parent_view, 4, n, "parent")
        || check_items(&moving_view, 1, n, "moving") || check_items(&rest_view, 4, n, "rest")
        || check_items(&arrive_view, 4, n, "arrive"))
        goto done;
    if (row < 1) {
        PyErr_SetString(PyExc_ValueError, "card_loads: a row has at least one cell");
        goto done;
    }
    double *load = load_view.buf;
    const int32_t *parent = parent_view.buf, *rest = rest_view.buf, *arrive = arrive_view.buf,
                  *port_of_link = port_view.buf;
    const uint8_t *moving = moving_view.buf;
    Py_ssize_t links = port_view.len / 4;
    int32_t top = 0, width = 1;
    key = malloc((n ? n : 1) * sizeof(int32_t)); /* depth, then the sort key */
    order = malloc((n ? n : 1) * sizeof(int32_t));
    if (!key || !order) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t cell = 0; cell < n; cell++) {
        if (!moving[cell])
            continue;
        key[cell] = links_of(rest[cell]);
        Py_ssize_t first = cell - cell % row; /* parents are in their children's row */
        if (key[cell] < 1 || arrive[cell] < 0 || arrive[cell] >= links || parent[cell] < first
            || parent[cell] >= first + row || parent[cell] >= n || port_of_link[arrive[cell]] < 0) {
            result = index_error("links, arrival or parent of a moving cell", cell);
            goto done;
        }
        if (key[cell] > top)
            top = key[cell];
        if (port_of_link[arrive[cell]] >= width)
            width = port_of_link[arrive[cell]] + 1;
    }
    /* per row (a destination's tree: parents are in their children's row, and the row's arrays stay
       in the caches), a counting sort on the key (top - depth) * width + port, stable in the cells'
       order, then the additions in that order */
    Py_ssize_t keys = (Py_ssize_t)top * width;
    start = malloc((keys + 1) * sizeof(Py_ssize_t));
    if (!start) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t first = 0; first < n; first += row) {
        Py_ssize_t last = first + row < n ? first + row : n;
        memset(start, 0, (keys + 1) * sizeof(Py_ssize_t));
        for (Py_ssize_t cell = first; cell < last; cell++) {
            if (!moving[cell])
                continue;
            key[cell] = (top - key[cell]) * width + port_of_link[arrive[cell]];
            start[key[cell] + 1]++;
        }
        for (Py_ssize_t at = 0; at < keys; at++)
            start[at + 1] += start[at];
        Py_ssize_t inner = start[keys];
        for (Py_ssize_t cell = first; cell < last; cell++)
            if (moving[cell])
                order[start[key[cell]]++] = (int32_t)cell;
        for (Py_ssize_t at = 0; at < inner; at++) {
            int32_t cell = order[at];
            load[parent[cell]] += load[cell];
        }
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    free(start);
    free(order);
    free(key);
    PyBuffer_Release(&load_view);
    PyBuffer_Release(&parent_view);
    PyBuffer_Release(&moving_view);
    PyBuffer_Release(&rest_view);
    PyBuffer_Release(&arrive_view);
    PyBuffer_Release(&port_view);
    return result;
}

/* Eight flags (each 0 or 1) as one word, flag k in byte k from the low end: the lowest set bit is
   then the first flag on. One load instead of eight. */
static inline uint64_t eight_flags(const uint8_t *flags)
{
    uint64_t word;
    memcpy(&word, flags, sizeof word);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    word = __builtin_bswap64(word);
#endif
    return word;
}

/*
 * fold_loads(present: bool[cells * width], load: float64[cells], weights: float64[count * pes],
 *            source_at: int32[cards * width], link: int32[cells], queue: int32[cells],
 *            link_load: float64 in/out, channel_load: float64 in/out,
 *            width: int, cards: int, classes: int, queue_stride: int) -> None
 *
 * The entries of a block in table order: each present (row, card, ingress port) cell, row = destination
 * * classes + class, cells = rows * cards. An entry's load is that of the cell its packets come from
 * (load[row * cards + source_at[card * width + port]]) or, for a first hop, its PE's weight towards the
 * row's destination (weights[destination * pes + pe], pe = source_at[...] - cards). It is added to its
 * card's link and channel (link * queue_stride + queue): one running sum each, in table order.
 */
static PyObject *fold_loads(PyObject *self, PyObject *args)
{
    Py_buffer present_view, load_view, weights_view, source_at_view, link_view, queue_view,
        link_load_view, channel_load_view;
    Py_ssize_t width, cards, classes, queue_stride;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*w*w*nnnn", &present_view, &load_view, &weights_view,
                          &source_at_view, &link_view, &queue_view, &link_load_view, &channel_load_view,
                          &width, &cards, &classes, &queue_stride))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t cells = load_view.len / 8;
    if (width < 1 || cards < 1 || classes < 1 || queue_stride < 1 || cells % (cards * classes)) {
        PyErr_SetString(PyExc_ValueError, "fold_loads: bad width, cards, classes or queue stride");
        goto done;
    }
    Py_ssize_t count = cells / (cards * classes), pes = count ? weights_view.len / 8 / count : 0;
    if (check_items(&present_view, 1, cells * width, "present") || check_items(&load_view, 8, cells, "load")
        || check_items(&weights_view, 8, pes * count, "weights")
        || check_items(&source_at_view, 4, cards * width, "source_at")
        || check_items(&link_view, 4, cells, "link") || check_items(&queue_view, 4, cells, "queue"))
        goto done;
    const uint8_t *present = present_view.buf;
    const double *load = load_view.buf, *weights = weights_view.buf;
    const int32_t *source_at = source_at_view.buf, *link = link_view.buf, *queue = queue_view.buf;
    double *link_load = link_load_view.buf, *channel_load = channel_load_view.buf;
    Py_ssize_t links = link_load_view.len / 8, channels = channel_load_view.len / 8;
    for (Py_ssize_t at = 0; at < cards * width; at++) /* checked once: read for every entry */
        if (source_at[at] < 0 || source_at[at] >= cards + pes) {
            result = index_error("source_at (an entry's cell or cards + PE)", source_at[at]);
            goto done;
        }
    for (Py_ssize_t row = 0, cell = 0; row < cells / cards; row++) {
        const double *row_load = load + row * cards, *row_weights = weights + row / classes * pes;
        for (Py_ssize_t card = 0; card < cards; card++, cell++) {
            const uint8_t *marks = present + cell * width;
            const int32_t *from_port = source_at + card * width;
            Py_ssize_t to_link = link[cell], to_channel = to_link * queue_stride + queue[cell];
            if (to_link < 0 || to_link >= links || to_channel < 0 || to_channel >= channels) {
                result = index_error("a cell's link or channel (cell)", cell);
                goto done;
            }
            /* the card's entries all go to one link and one channel: their running sums stay in
               registers while the entries are added, one after the other, in port order */
            double link_sum = link_load[to_link], channel_sum = channel_load[to_channel];
#define ADD_ENTRY(port)                                                                              \
    do {                                                                                             \
        Py_ssize_t from = from_port[port];                                                           \
        double value = from < cards ? row_load[from] : row_weights[from - cards];                    \
        link_sum += value;                                                                           \
        channel_sum += value;                                                                        \
    } while (0)
            Py_ssize_t port = 0;
            for (; port + 8 <= width; port += 8) { /* wide cards: eight ports at a time */
                uint64_t word = eight_flags(marks + port);
                while (word) { /* the ports with an entry, lowest first */
                    int byte = __builtin_ctzll(word) / 8;
                    word &= ~((uint64_t)0xff << (8 * byte));
                    ADD_ENTRY(port + byte);
                }
            }
            for (; port < width; port++)
                if (marks[port])
                    ADD_ENTRY(port);
#undef ADD_ENTRY
            link_load[to_link] = link_sum;
            channel_load[to_channel] = channel_sum;
        }
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    PyBuffer_Release(&present_view);
    PyBuffer_Release(&load_view);
    PyBuffer_Release(&weights_view);
    PyBuffer_Release(&source_at_view);
    PyBuffer_Release(&link_view);
    PyBuffer_Release(&queue_view);
    PyBuffer_Release(&link_load_view);
    PyBuffer_Release(&channel_load_view);
    return result;
}

/*
 * dependencies(card_link: bool[cells], parent: int32[cells], link: int32[cells], egress: int32[cells],
 *              queue: int32[cells], channel_flags: bool in/out, edge_flags: bool in/out,
 *              width: int, stride: int) -> None
 *
 * The channels a block uses and the dependencies between them. A cell that sends on a link between
 * cards (card_link) uses channel link * stride + queue; if the card its packets go to (parent) sends on
 * too, the pair holds the dependency channel * (width * stride) + that card's egress * stride + queue.
 */
static PyObject *dependencies(PyObject *self, PyObject *args)
{
    Py_buffer card_link_view, parent_view, link_view, egress_view, queue_view, channel_view, edge_view;
    Py_ssize_t width, stride;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*w*w*nn", &card_link_view, &parent_view, &link_view,
                          &egress_view, &queue_view, &channel_view, &edge_view, &width, &stride))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t cells = card_link_view.len;
    if (check_items(&parent_view, 4, cells, "parent") || check_items(&link_view, 4, cells, "link")
        || check_items(&egress_view, 4, cells, "egress") || check_items(&queue_view, 4, cells, "queue"))
        goto done;
    const uint8_t *card_link = card_link_view.buf;
    const int32_t *parent = parent_view.buf, *link = link_view.buf, *egress = egress_view.buf,
                  *queue = queue_view.buf;
    uint8_t *channel_flags = channel_view.buf, *edge_flags = edge_view.buf;
    Py_ssize_t channels = channel_view.len, edges = edge_view.len;
    for (Py_ssize_t cell = 0; cell < cells; cell++) {
        if (!card_link[cell])
            continue;
        Py_ssize_t channel = (Py_ssize_t)link[cell] * stride + queue[cell];
        int32_t next = parent[cell];
        if (channel < 0 || channel >= channels || next < 0 || next >= cells) {
            result = index_error("a cell's channel or parent (cell)", cell);
            goto done;
        }
        channel_flags[channel] = 1;
        if (!card_link[next])
            continue; /* the next card delivers */
        Py_ssize_t edge = channel * width * stride + (Py_ssize_t)egress[next] * stride + queue[next];
        if (edge < 0 || edge >= edges) {
            result = index_error("a dependency (cell)", cell);
            goto done;
        }
        edge_flags[edge] = 1;
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    PyBuffer_Release(&card_link_view);
    PyBuffer_Release(&parent_view);
    PyBuffer_Release(&link_view);
    PyBuffer_Release(&egress_view);
    PyBuffer_Release(&queue_view);
    PyBuffer_Release(&channel_view);
    PyBuffer_Release(&edge_view);
    return result;
}

static PyMethodDef methods[] = {
    {"reach", reach, METH_VARARGS, "Cells that packets get to from the marked cells."},
    {"rest_links", rest_links, METH_VARARGS, "Links from each cell to delivery along parent pointers."},
    {"card_loads", card_loads, METH_VARARGS, "Cells' loads added to their parents', deepest first."},
    {"fold_loads", fold_loads, METH_VARARGS, "Entries' loads added to links and channels in table order."},
    {"dependencies", dependencies, METH_VARARGS, "Channels used and the dependencies between them."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernels", NULL, -1, methods};

PyMODINIT_FUNC PyInit__kernels(void) { return PyModule_Create(&module); }
