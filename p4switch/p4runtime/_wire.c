/* The all-exact table writes of a serialised P4Runtime WriteRequest, read straight from its bytes
 * (wrapped by p4switch/p4runtime/wire.py).
 *
 * An install sends millions of route entries, each an Update of one TableEntry with a few exact
 * matches and an action. Reading one through protobuf's Python objects costs a wrapper per
 * message and per field; here the wire format is walked once, and each Update of the one shape
 * the fast path takes (see canonical_update) becomes a tuple of plain values. Any other Update,
 * however valid, gives None, and the caller reads that one through protobuf as before.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

typedef struct {
    const uint8_t *p, *end;
} span;

typedef struct {
    uint64_t number;
    int wire;
    uint64_t value; /* wire type 0 */
    span payload;   /* wire type 2 */
} field;

enum { VARINT = 0, FIXED64 = 1, LEN = 2, FIXED32 = 5 };

static int read_varint(span *s, uint64_t *out) {
    uint64_t value = 0;
    for (int shift = 0; shift < 64 && s->p < s->end; shift += 7) {
        uint8_t byte = *s->p++;
        value |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) {
            *out = value;
            return 0;
        }
    }
    return -1;
}

/* The next field of `s`: 1 when there is one, 0 at the end, -1 if the bytes are not protobuf's wire
 * format or use a wire type no message here has (groups). */
static int next_field(span *s, field *f) {
    uint64_t key;
    if (s->p >= s->end)
        return 0;
    if (read_varint(s, &key))
        return -1;
    f->number = key >> 3;
    f->wire = (int)(key & 7);
    switch (f->wire) {
    case VARINT:
        return read_varint(s, &f->value) ? -1 : 1;
    case LEN: {
        uint64_t length;
        if (read_varint(s, &length) || length > (uint64_t)(s->end - s->p))
            return -1;
        f->payload.p = s->p;
        f->payload.end = s->p + length;
        s->p += length;
        return 1;
    }
    case FIXED64:
        if (s->end - s->p < 8)
            return -1;
        s->p += 8;
        return 1;
    case FIXED32:
        if (s->end - s->p < 4)
            return -1;
        s->p += 4;
        return 1;
    default:
        return -1;
    }
}

/* The only field of `message`, if it has exactly one and it is field `number` as a LEN payload. */
static int only_message(span message, uint64_t number, span *out) {
    field f;
    if (next_field(&message, &f) != 1 || f.number != number || f.wire != LEN)
        return 0;
    *out = f.payload;
    return message.p == message.end;
}

/* A FieldMatch {field_id, exact {value}} of field `field_id` whose value (big-endian, at least one
 * byte, leading zeros allowed) fits `width` bits and 64 bits; its value in *out. */
static int exact_match(span message, uint64_t field_id, uint64_t width, uint64_t *out) {
    field f;
    int seen_id = 0, seen_exact = 0, status;
    span exact = {0};
    while ((status = next_field(&message, &f)) == 1) {
        if (f.number == 1 && f.wire == VARINT && !seen_id) {
            if (f.value != field_id)
                return 0;
            seen_id = 1;
        } else if (f.number == 2 && f.wire == LEN && !seen_exact) {
            exact = f.payload;
            seen_exact = 1;
        } else {
            return 0;
        }
    }
    span data;
    if (status || !seen_id || !seen_exact || !only_message(exact, 1, &data) || data.p == data.end)
        return 0;
    while (data.p < data.end && *data.p == 0)
        data.p++;
    if (data.end - data.p > 8)
        return 0;
    uint64_t value = 0;
    for (; data.p < data.end; data.p++)
        value = (value << 8) | *data.p;
    if (width < 64 && (value >> width))
        return 0;
    *out = value;
    return 1;
}

/* (type, table id, match values, TableAction bytes) of one serialised Update when it is canonical:
 * INSERT, MODIFY or DELETE of a TableEntry that has a table id in `shapes`, that table's fields in
 * order, each once and exact, maybe an action, and no other field (no priority, default flag, meter
 * config...); each field once. Py_None otherwise; NULL with an exception set on error. */
static PyObject *canonical_update(span update, PyObject *shapes) {
    field f;
    int status;
    uint64_t type = 0;
    int seen_type = 0, seen_entity = 0;
    span entity = {0};
    while ((status = next_field(&update, &f)) == 1) {
        if (f.number == 1 && f.wire == VARINT && !seen_type) {
            type = f.value;
            seen_type = 1;
        } else if (f.number == 2 && f.wire == LEN && !seen_entity) {
            entity = f.payload;
            seen_entity = 1;
        } else {
            Py_RETURN_NONE;
        }
    }
    span entry;
    if (status || type < 1 || type > 3 || !seen_entity || !only_message(entity, 2, &entry))
        Py_RETURN_NONE;

    uint64_t table_id = 0;
    int seen_table = 0, seen_action = 0;
    span action = {0}, matches[16];
    Py_ssize_t count = 0;
    while ((status = next_field(&entry, &f)) == 1) {
        if (f.number == 1 && f.wire == VARINT && !seen_table) {
            table_id = f.value;
            seen_table = 1;
        } else if (f.number == 2 && f.wire == LEN && count < 16) {
            matches[count++] = f.payload;
        } else if (f.number == 3 && f.wire == LEN && !seen_action) {
            action = f.payload;
            seen_action = 1;
        } else {
            Py_RETURN_NONE;
        }
    }
    if (status || !seen_table || table_id > UINT32_MAX)
        Py_RETURN_NONE;
    PyObject *key = PyLong_FromUnsignedLongLong(table_id);
    if (!key)
        return NULL;
    PyObject *shape = PyDict_GetItemWithError(shapes, key); /* borrowed */
    Py_DECREF(key);
    if (!shape)
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    PyObject *ids, *widths;
    if (!PyArg_ParseTuple(shape, "O!O!", &PyTuple_Type, &ids, &PyTuple_Type, &widths))
        return NULL;
    if (PyTuple_GET_SIZE(ids) != count || PyTuple_GET_SIZE(widths) != count)
        Py_RETURN_NONE;
    uint64_t values[16];
    for (Py_ssize_t i = 0; i < count; i++) {
        uint64_t field_id = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(ids, i));
        uint64_t width = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(widths, i));
        if (PyErr_Occurred())
            return NULL;
        if (!exact_match(matches[i], field_id, width, &values[i]))
            Py_RETURN_NONE;
    }
    PyObject *match = PyTuple_New(count);
    if (!match)
        return NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *value = PyLong_FromUnsignedLongLong(values[i]);
        if (!value) {
            Py_DECREF(match);
            return NULL;
        }
        PyTuple_SET_ITEM(match, i, value);
    }
    const char *action_bytes = action.p ? (const char *)action.p : ""; /* absent: b"" as protobuf gives */
    return Py_BuildValue("(KKNy#)", (unsigned long long)type, (unsigned long long)table_id, match,
                         action_bytes, (Py_ssize_t)(action.end - action.p));
}

/* exact_updates(request: bytes-like, shapes: dict) -> list | None: one item per Update of the
 * serialised WriteRequest, in order (canonical_update's tuple or None); None if the bytes are not a
 * message protobuf would have parsed the same way (the caller then reads every Update itself). */
static PyObject *exact_updates(PyObject *self, PyObject *args) {
    Py_buffer buffer;
    PyObject *shapes;
    if (!PyArg_ParseTuple(args, "y*O!", &buffer, &PyDict_Type, &shapes))
        return NULL;
    PyObject *items = PyList_New(0);
    if (!items) {
        PyBuffer_Release(&buffer);
        return NULL;
    }
    span request = {(const uint8_t *)buffer.buf, (const uint8_t *)buffer.buf + buffer.len};
    field f;
    int status;
    while ((status = next_field(&request, &f)) == 1) {
        if (f.number != 4)
            continue;
        if (f.wire != LEN) {
            status = -1;
            break;
        }
        PyObject *item = canonical_update(f.payload, shapes);
        if (!item || PyList_Append(items, item)) {
            Py_XDECREF(item);
            Py_DECREF(items);
            PyBuffer_Release(&buffer);
            return NULL;
        }
        Py_DECREF(item);
    }
    PyBuffer_Release(&buffer);
    if (status) {
        Py_DECREF(items);
        Py_RETURN_NONE;
    }
    return items;
}

/* exact_update(update: bytes-like, shapes: dict) -> tuple | None: canonical_update of one
 * serialised Update. */
static PyObject *exact_update(PyObject *self, PyObject *args) {
    Py_buffer buffer;
    PyObject *shapes;
    if (!PyArg_ParseTuple(args, "y*O!", &buffer, &PyDict_Type, &shapes))
        return NULL;
    span update = {(const uint8_t *)buffer.buf, (const uint8_t *)buffer.buf + buffer.len};
    PyObject *item = canonical_update(update, shapes);
    PyBuffer_Release(&buffer);
    return item;
}

static PyMethodDef methods[] = {
    {"exact_updates", exact_updates, METH_VARARGS,
     "The canonical all-exact table writes of a serialised WriteRequest, one item per Update."},
    {"exact_update", exact_update, METH_VARARGS, "The canonical all-exact table write of one Update, or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_wire", NULL, -1, methods};

PyMODINIT_FUNC PyInit__wire(void) { return PyModule_Create(&module); }
