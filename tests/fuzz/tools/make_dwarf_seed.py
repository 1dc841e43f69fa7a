#!/usr/bin/env python3
"""Writes small seeds for the dwarf_types fuzz target: DWARF 4 shaped like
Go's linker writes it (cmd/link/internal/ld/dwarf.go): one Go compile unit
with base types, string and slice structs, a named struct that points to
itself, an array, a map and an interface typedef, functions whose
parameters have DW_FORM_block1 locations (registers, pieces, fbreg), an
abstract inlined function with its inlined call and out-of-line copy, and a
package variable. Input layout of the target: u16 little-endian length of
.debug_abbrev, .debug_abbrev, then .debug_info.

    make_dwarf_seed.py OUTDIR
"""
import struct
import sys

# Go's own attributes.
GO_KIND, GO_KEY, GO_ELEM, GO_EMBEDDED, GO_RUNTIME_TYPE = 0x2900, 0x2901, 0x2902, 0x2903, 0x2904
# Forms.
ADDR, DATA1, STRING, FLAG, UDATA, REF_ADDR, BLOCK1 = 0x01, 0x0b, 0x08, 0x0c, 0x0f, 0x10, 0x0a
# Tags and attributes used.
T = dict(cu=0x11, base=0x24, ptr=0x0f, struct=0x13, member=0x0d, typedef=0x16, sub=0x2e, param=0x05,
         var=0x34, array=0x01, subrange=0x21, inlined=0x1d)
A = dict(name=0x03, lang=0x13, producer=0x25, enc=0x3e, size=0x0b, type=0x49, dml=0x38, low=0x11, high=0x12,
         fb=0x40, varparam=0x4b, line=0x3b, loc=0x02, count=0x37, inline=0x20, origin=0x31, cfile=0x58,
         cline=0x59, external=0x3f)

ABBREVS = {  # code: (tag, children, [(attr, form)])
    1: ('cu', 1, [('name', STRING), ('lang', DATA1), ('producer', STRING)]),
    2: ('base', 0, [('name', STRING), ('enc', DATA1), ('size', DATA1), (GO_KIND, DATA1), (GO_RUNTIME_TYPE, ADDR)]),
    3: ('ptr', 0, [('name', STRING), ('type', REF_ADDR), (GO_KIND, DATA1)]),
    4: ('struct', 1, [('name', STRING), ('size', UDATA), (GO_KIND, DATA1)]),
    5: ('member', 0, [('name', STRING), ('dml', UDATA), ('type', REF_ADDR), (GO_EMBEDDED, FLAG)]),
    6: ('typedef', 0, [('name', STRING), ('type', REF_ADDR)]),
    7: ('sub', 1, [('name', STRING), ('low', ADDR), ('high', ADDR), ('fb', BLOCK1), ('external', FLAG)]),
    8: ('param', 0, [('name', STRING), ('varparam', FLAG), ('line', UDATA), ('type', REF_ADDR), ('loc', BLOCK1)]),
    9: ('var', 0, [('name', STRING), ('loc', BLOCK1), ('type', REF_ADDR)]),
    10: ('array', 1, [('name', STRING), (GO_KIND, DATA1), ('type', REF_ADDR)]),
    11: ('subrange', 0, [('count', UDATA)]),
    12: ('struct', 1, [('name', STRING), ('size', UDATA), (GO_KIND, DATA1), (GO_ELEM, REF_ADDR)]),
    13: ('sub', 1, [('name', STRING), ('inline', DATA1), ('external', FLAG)]),
    14: ('param', 0, [('name', STRING), ('varparam', FLAG), ('type', REF_ADDR)]),
    15: ('inlined', 0, [('origin', REF_ADDR), ('low', ADDR), ('high', ADDR), ('cfile', DATA1), ('cline', UDATA)]),
    16: ('sub', 1, [('origin', REF_ADDR), ('low', ADDR), ('high', ADDR), ('fb', BLOCK1)]),
    17: ('param', 0, [('origin', REF_ADDR), ('loc', BLOCK1)]),
    18: ('typedef', 0, [('name', STRING), ('type', REF_ADDR), (GO_KIND, DATA1), (GO_KEY, REF_ADDR), (GO_ELEM, REF_ADDR)]),
    19: ('typedef', 0, [('name', STRING), ('type', REF_ADDR), (GO_KIND, DATA1)]),
}


def uleb(v):
    out = bytearray()
    while True:
        b = v & 0x7f
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def abbrev_section():
    out = bytearray()
    for code, (tag, children, attrs) in ABBREVS.items():
        out += uleb(code) + uleb(T[tag]) + bytes([children])
        for at, form in attrs:
            out += uleb(A[at] if isinstance(at, str) else at) + uleb(form)
        out += b'\0\0'
    return bytes(out + b'\0')


CFA = bytes([0x9c])                      # DW_OP_call_frame_cfa
def reg(n): return bytes([0x50 + n])     # DW_OP_regN
def piece(n): return bytes([0x93]) + uleb(n)
def fbreg(n): return bytes([0x91]) + bytes([n & 0x7f])  # small positive sleb
RAX, RDX, RCX, RBX, RSI, RDI = 0, 1, 2, 3, 4, 5


def info_section(dies):
    """dies: nested list of (label, code, values, children). Two passes: offsets, then bytes."""
    offsets = {}

    def emit(die, out, resolve):
        label, code, values, children = die
        if label:
            offsets[label] = len(out) + 11  # after the unit header
        out += uleb(code)
        for (at, form), v in zip(ABBREVS[code][2], values):
            if form == STRING:
                out += v.encode() + b'\0'
            elif form in (DATA1, FLAG):
                out.append(v)
            elif form == UDATA:
                out += uleb(v)
            elif form == ADDR:
                out += struct.pack('<Q', v)
            elif form == REF_ADDR:
                out += struct.pack('<I', offsets.get(v, 0) if resolve else 0)
            elif form == BLOCK1:
                out += bytes([len(v)]) + v
        if ABBREVS[code][1]:
            for c in children:
                emit(c, out, resolve)
            out.append(0)

    for resolve in (False, True):
        body = bytearray()
        for d in dies:
            emit(d, body, resolve)
    unit = struct.pack('<HIB', 4, 0, 8) + body
    return struct.pack('<I', len(unit)) + unit


def die(code, values, children=(), label=None):
    return (label, code, values, list(children))


def go_unit(funcs=True, types=True):
    t = []
    if types:
        t += [
            die(2, ['int', 0x05, 8, 2, 0x1000], label='int'),
            die(2, ['uint8', 0x08, 1, 8, 0x1040], label='uint8'),
            die(2, ['float64', 0x04, 8, 14, 0x1080], label='float64'),
            die(2, ['bool', 0x02, 1, 1, 0x10c0], label='bool'),
            die(3, ['*uint8', 'uint8', 22], label='*uint8'),
            die(3, ['*int', 'int', 22], label='*int'),
            die(3, ['unsafe.Pointer', 'uint8', 26], label='unsafe.Pointer'),
            die(4, ['string', 16, 24], [die(5, ['str', 0, '*uint8', 0]), die(5, ['len', 8, 'int', 0])], label='string'),
            die(12, ['[]int', 24, 23, 'int'], [die(5, ['array', 0, '*int', 0]), die(5, ['len', 8, 'int', 0]),
                                               die(5, ['cap', 16, 'int', 0])], label='[]int'),
            die(4, ['main.T', 40, 25], [die(5, ['A', 0, 'int', 0]), die(5, ['S', 8, 'string', 0]),
                                        die(5, ['P', 24, '*main.T', 0]), die(5, ['F', 32, 'float64', 0])],
                label='main.T'),
            die(6, ['main.T', 'main.T']),  # the gdb typedef of a named type
            die(3, ['*main.T', 'main.T', 22], label='*main.T'),
            die(10, ['[3]int', 17, 'int'], [die(11, [3])], label='[3]int'),
            die(4, ['runtime.eface', 16, 25], [die(5, ['_type', 0, '*uint8', 0]),
                                               die(5, ['data', 8, 'unsafe.Pointer', 0])], label='runtime.eface'),
            die(19, ['interface {}', 'runtime.eface', 20], label='interface {}'),
            die(3, ['*hash<string,int>', 'uint8', 22], label='*hash'),
            die(18, ['map[string]int', '*hash', 21, 'string', 'int'], label='map[string]int'),
            die(4, ['main.Outer', 24, 25], [die(5, ['T', 0, '*main.T', 1]), die(5, ['B', 8, 'bool', 0]),
                                            die(5, ['M', 16, 'map[string]int', 0])], label='main.Outer'),
        ]
    f = []
    if funcs:
        f += [
            die(13, ['main.inl', 1, 1], [die(14, ['v', 0, 'int'], label='inl.v')], label='main.inl'),
            die(7, ['main.add', 0x401000, 0x401040, CFA, 1], [
                die(8, ['x', 0, 3, 'int', reg(RAX)]),
                die(8, ['y', 0, 3, 'int', reg(RBX)]),
                die(8, ['~r0', 1, 3, 'int', b'']),
                die(15, ['main.inl', 0x401010, 0x401020, 1, 7]),
            ]),
            die(7, ['main.(*T).Get', 0x401040, 0x4010c0, CFA, 1], [
                die(8, ['t', 0, 10, '*main.T', reg(RAX)]),
                die(8, ['s', 0, 10, 'string', reg(RBX) + piece(8) + reg(RCX) + piece(8)]),
                die(8, ['xs', 0, 10, '[]int', reg(RDI) + piece(8) + reg(RSI) + piece(8) + bytes([0x58]) + piece(8)]),
                die(8, ['a', 0, 10, '[3]int', fbreg(8)]),
                die(8, ['i', 0, 10, 'interface {}', b'\x9c\x23\x20']),
                die(8, ['m', 0, 10, 'map[string]int', bytes([0x59])]),
                die(8, ['o', 0, 10, 'main.Outer', fbreg(16)]),
                die(8, ['~r0', 1, 10, 'int', b'']),
                die(8, ['~r1', 1, 10, 'bool', b'']),
            ]),
            die(16, ['main.inl', 0x4010c0, 0x4010e0, CFA], [die(17, ['inl.v', reg(RAX)])]),
            die(9, ['main.counter', b'\x03' + struct.pack('<Q', 0x5000), 'int']),
            die(9, ['main.cfg', b'\x03' + struct.pack('<Q', 0x5008), 'main.T']),
        ]
    return [die(1, ['main', 0x16, 'Go cmd/compile go1.19.8; regabi'], t + f)]


def seed(dies):
    ab = abbrev_section()
    return struct.pack('<H', len(ab)) + ab + info_section(dies)


out = sys.argv[1]
for name, dies in {'go_unit': go_unit(), 'types_only': go_unit(funcs=False),
                   'funcs_only': go_unit(types=False)}.items():
    data = seed(dies)
    open('%s/%s' % (out, name), 'wb').write(data)
    print('%s/%s: %d bytes' % (out, name, len(data)))
