/* A port's frames received and sent in batches, one system call each (recvmmsg, sendmmsg), for the
 * data plane's fast path (wrapped by p4switch/daemon/packet_io.py).
 *
 * Through Python's socket module every frame costs a system call and, for recvmsg, a tuple, a list
 * and the ancillary data's objects; here a batch costs one call, and each frame one bytes object.
 * What a frame becomes is what the Python path made of it: a frame the kernel cut (MSG_TRUNC) is
 * counted and left out, a VLAN tag the kernel took off (PACKET_AUXDATA) is put back after the MACs.
 * The hosts' receiver reads its frames here too, with their kernel receive times (SO_TIMESTAMPNS).
 */
#define _GNU_SOURCE
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define MAX_BATCH 64
/* the largest frame a port takes (ports.MAX_FRAME_BYTES): a 65,535-byte MTU's frame, untagged */
#define FRAME_BYTES (65535 + 14)
#define VLAN_TPID_8021Q 0x8100

/* The receive buffers: touched only as far as frames fill them. Every call holds the interpreter
 * lock throughout (the sockets are non-blocking), so one set serves every port and thread. */
static uint8_t frames[MAX_BATCH][FRAME_BYTES];
static union {
    struct cmsghdr header;
    char bytes[CMSG_SPACE(sizeof(struct tpacket_auxdata)) + CMSG_SPACE(sizeof(struct timespec))];
} controls[MAX_BATCH];

static const struct tpacket_auxdata *auxdata_of(struct msghdr *message) {
    for (struct cmsghdr *c = CMSG_FIRSTHDR(message); c; c = CMSG_NXTHDR(message, c))
        if (c->cmsg_level == SOL_PACKET && c->cmsg_type == PACKET_AUXDATA &&
            c->cmsg_len >= CMSG_LEN(sizeof(struct tpacket_auxdata)))
            return (const struct tpacket_auxdata *)CMSG_DATA(c);
    return NULL;
}

/* The kernel's receive time of the frame in ns since the epoch (SO_TIMESTAMPNS), or -1 without one. */
static long long stamp_of(struct msghdr *message) {
    for (struct cmsghdr *c = CMSG_FIRSTHDR(message); c; c = CMSG_NXTHDR(message, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS &&
            c->cmsg_len >= CMSG_LEN(sizeof(struct timespec))) {
            struct timespec stamp;
            memcpy(&stamp, CMSG_DATA(c), sizeof stamp);
            return (long long)stamp.tv_sec * 1000000000LL + stamp.tv_nsec;
        }
    return -1;
}

/* The frame as bytes, with the VLAN tag of `aux` (if the kernel took one off) back after the MACs. */
static PyObject *frame_bytes(const uint8_t *data, size_t length, const struct tpacket_auxdata *aux) {
    if (!aux || !(aux->tp_status & TP_STATUS_VLAN_VALID))
        return PyBytes_FromStringAndSize((const char *)data, (Py_ssize_t)length);
    uint16_t tpid = (aux->tp_status & TP_STATUS_VLAN_TPID_VALID) ? aux->tp_vlan_tpid : VLAN_TPID_8021Q;
    uint16_t tci = aux->tp_vlan_tci;
    PyObject *tagged = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)length + 4);
    if (!tagged)
        return NULL;
    uint8_t *out = (uint8_t *)PyBytes_AS_STRING(tagged);
    size_t head = length < 12 ? length : 12;
    memcpy(out, data, head);
    out[head] = tpid >> 8;
    out[head + 1] = tpid & 0xff;
    out[head + 2] = tci >> 8;
    out[head + 3] = tci & 0xff;
    memcpy(out + head + 4, data + head, length - head);
    return tagged;
}

/* Up to `count` frames waiting on the non-blocking packet socket `fd`, in arrival order, as
 * (frames, cut) or, with `stamped`, (frames, stamps, cut): `stamps` holds each frame's kernel receive
 * time (stamp_of), `cut` how many more were read but cut (left out). OSError for an error other than
 * "nothing waits". */
static PyObject *receive_batch(int fd, int count, int stamped) {
    if (count < 1 || count > MAX_BATCH)
        return PyErr_Format(PyExc_ValueError, "a batch is 1 to %d frames, not %d", MAX_BATCH, count);
    struct mmsghdr messages[MAX_BATCH];
    struct iovec vectors[MAX_BATCH];
    memset(messages, 0, sizeof(struct mmsghdr) * (size_t)count);
    for (int i = 0; i < count; i++) {
        vectors[i].iov_base = frames[i];
        vectors[i].iov_len = FRAME_BYTES;
        messages[i].msg_hdr.msg_iov = &vectors[i];
        messages[i].msg_hdr.msg_iovlen = 1;
        messages[i].msg_hdr.msg_control = controls[i].bytes;
        messages[i].msg_hdr.msg_controllen = sizeof(controls[i].bytes);
    }
    int received;
    do
        received = recvmmsg(fd, messages, (unsigned int)count, MSG_DONTWAIT, NULL);
    while (received < 0 && errno == EINTR);
    if (received < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return PyErr_SetFromErrno(PyExc_OSError);
        received = 0;
    }
    PyObject *list = PyList_New(0);
    PyObject *stamps = stamped ? PyList_New(0) : NULL;
    if (!list || (stamped && !stamps))
        goto failed;
    int cut = 0;
    for (int i = 0; i < received; i++) {
        struct msghdr *message = &messages[i].msg_hdr;
        if (message->msg_flags & MSG_TRUNC) {
            cut++;
            continue;
        }
        PyObject *frame = frame_bytes(frames[i], messages[i].msg_len, auxdata_of(message));
        int failed = !frame || PyList_Append(list, frame);
        Py_XDECREF(frame);
        if (failed)
            goto failed;
        if (stamped) {
            PyObject *stamp = PyLong_FromLongLong(stamp_of(message));
            failed = !stamp || PyList_Append(stamps, stamp);
            Py_XDECREF(stamp);
            if (failed)
                goto failed;
        }
    }
    if (stamped)
        return Py_BuildValue("(NNi)", list, stamps, cut);
    return Py_BuildValue("(Ni)", list, cut);
failed:
    Py_XDECREF(list);
    Py_XDECREF(stamps);
    return NULL;
}

/* receive(fd, count) -> (frames, cut) */
static PyObject *receive_frames(PyObject *self, PyObject *args) {
    int fd, count;
    if (!PyArg_ParseTuple(args, "ii", &fd, &count))
        return NULL;
    return receive_batch(fd, count, 0);
}

/* receive_stamped(fd, count) -> (frames, stamps, cut) */
static PyObject *receive_stamped_frames(PyObject *self, PyObject *args) {
    int fd, count;
    if (!PyArg_ParseTuple(args, "ii", &fd, &count))
        return NULL;
    return receive_batch(fd, count, 1);
}

/* send(fd, frames) -> (sent, failed): every frame of the list `frames` (bytes) written to the
 * packet socket `fd` in order, in as few calls as the kernel allows; a frame the kernel refuses
 * (full, down, too long) is counted in `failed` and skipped, as one send() per frame would. */
static PyObject *send_frames(PyObject *self, PyObject *args) {
    int fd;
    PyObject *list;
    if (!PyArg_ParseTuple(args, "iO!", &fd, &PyList_Type, &list))
        return NULL;
    Py_ssize_t total = PyList_GET_SIZE(list);
    Py_ssize_t sent = 0, failed = 0, next = 0;
    struct mmsghdr messages[MAX_BATCH];
    struct iovec vectors[MAX_BATCH];
    while (next < total) {
        int count = 0;
        memset(messages, 0, sizeof(messages));
        for (; count < MAX_BATCH && next + count < total; count++) {
            PyObject *frame = PyList_GET_ITEM(list, next + count);
            if (!PyBytes_Check(frame))
                return PyErr_Format(PyExc_TypeError, "frame %zd is not bytes", next + count);
            vectors[count].iov_base = PyBytes_AS_STRING(frame);
            vectors[count].iov_len = (size_t)PyBytes_GET_SIZE(frame);
            messages[count].msg_hdr.msg_iov = &vectors[count];
            messages[count].msg_hdr.msg_iovlen = 1;
        }
        int done = sendmmsg(fd, messages, (unsigned int)count, MSG_DONTWAIT);
        if (done <= 0) {
            if (done < 0 && errno == EINTR)
                continue;
            failed++; /* the first frame of the batch was refused: skip it */
            next++;
            continue;
        }
        sent += done;
        next += done;
    }
    return Py_BuildValue("(nn)", sent, failed);
}

static PyMethodDef methods[] = {
    {"receive", receive_frames, METH_VARARGS, "Up to `count` frames waiting on a packet socket, in one call."},
    {"receive_stamped", receive_stamped_frames, METH_VARARGS,
     "receive, with each frame's kernel receive time (ns since the epoch, -1 without one)."},
    {"send", send_frames, METH_VARARGS, "Frames written to a packet socket in order, in as few calls as possible."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_packet_io", NULL, -1, methods};

PyMODINIT_FUNC PyInit__packet_io(void) {
    PyObject *m = PyModule_Create(&module);
    if (m && (PyModule_AddIntConstant(m, "MAX_BATCH", MAX_BATCH) ||
              PyModule_AddIntConstant(m, "FRAME_BYTES", FRAME_BYTES))) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
