/* core.p4: the P4_16 core library as the embedded twinnet target declares it,
 * written from the P4_16 language specification (v1.2.x), section "P4 core library". */
#ifndef _CORE_P4_
#define _CORE_P4_

/* Standard error codes of the core library. */
error {
    NoError,
    PacketTooShort,
    NoMatch,
    StackOutOfBounds,
    HeaderTooShort,
    ParserTimeout,
    ParserInvalidArgument
}

/* Extern used by parsers to read the packet. */
extern packet_in {
    void extract<T>(out T hdr);
    void extract<T>(out T variableSizeHeader, in bit<32> variableFieldSizeInBits);
    T lookahead<T>();
    void advance(in bit<32> sizeInBits);
    bit<32> length();
}

/* Extern used by deparsers to build the outgoing packet. */
extern packet_out {
    void emit<T>(in T hdr);
}

/* Assertion used in parsers: rejects the packet with the given error. */
extern void verify(in bool check, in error toSignal);

/* The empty action. */
@noWarn("unused")
action NoAction() {}

/* Standard match kinds. */
match_kind {
    exact,
    ternary,
    lpm
}

#endif  /* _CORE_P4_ */
