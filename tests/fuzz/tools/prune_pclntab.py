#!/usr/bin/env python3
"""Cuts a Go binary's .gopclntab down to a few consecutive functions, to make
small seeds for the pclntab fuzz target (a real table is megabytes).

    prune_pclntab.py BINARY FUNCTION COUNT OUT

Keeps COUNT functions starting COUNT/2 before FUNCTION (a name): their names,
pc-value tables, the compilation-unit file lists and file names they use, and
(formats 1.18 and 1.20) their inline trees, which are copied to the end of
the table with offsets relative to the table's start, since the fuzz harness
(fuzz_pclntab.cpp) sets moduledata.gofunc to the table's address. Formats:
1.16 (0xfffffffa), 1.18 (0xfffffff0), 1.20 (0xfffffff1); amd64 only.
Needs only Python's standard library (reads ELF headers itself).
"""
import struct
import sys


def sections(elf):
    shoff, = struct.unpack_from('<Q', elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', elf, 0x3a)
    raw = [struct.unpack_from('<IIQQQQIIQQ', elf, shoff + i * shentsize) for i in range(shnum)]
    stroff = raw[shstrndx][4]
    out = {}
    for s in raw:
        name = elf[stroff + s[0]:elf.index(b'\0', stroff + s[0])].decode()
        out[name] = dict(type=s[1], addr=s[3], offset=s[4], size=s[5])
    return out


def read_vaddr(elf, secs, addr, n):
    for s in secs.values():
        if s['addr'] and s['type'] != 8 and s['addr'] <= addr and addr + n <= s['addr'] + s['size']:
            o = s['offset'] + addr - s['addr']
            return elf[o:o + n]
    return None


def uvarint(b, pos):
    v = shift = 0
    while True:
        c = b[pos]
        pos += 1
        v |= (c & 0x7f) << shift
        shift += 7
        if not c & 0x80:
            return v, pos


def table_bytes(pctab, off):
    """The bytes of one pc-value table, terminator included."""
    pos, first = off, True
    while True:
        vd, pos = uvarint(pctab, pos)
        if vd == 0 and not first:
            return pctab[off:pos]
        _, pos = uvarint(pctab, pos)
        first = False


def table_values(t):
    pos, val, first, out = 0, -1, True, []
    while pos < len(t):
        vd, pos = uvarint(t, pos)
        if vd == 0 and not first:
            break
        _, pos = uvarint(t, pos)
        first = False
        val += -((vd + 1) >> 1) if vd & 1 else vd >> 1
        out.append(val)
    return out


def main():
    path, fname, count, outpath = sys.argv[1], sys.argv[2].encode(), int(sys.argv[3]), sys.argv[4]
    elf = open(path, 'rb').read()
    secs = sections(elf)
    sec = secs['.gopclntab']
    tab = elf[sec['offset']:sec['offset'] + sec['size']]
    tab_addr = sec['addr']
    magic, = struct.unpack_from('<I', tab, 0)
    v116, v120 = magic == 0xfffffffa, magic == 0xfffffff1
    nwords = 7 if v116 else 8
    words = list(struct.unpack_from('<%dQ' % nwords, tab, 8))
    nfunc = words[0]
    funcname, cu, filetab, pctab, pcln = words[-5:]
    fixed = 44 if v116 or v120 else 40
    entsz = 8 if v116 else 4

    def functab(i):
        return struct.unpack_from('<QQ' if v116 else '<II', tab, pcln + 2 * entsz * i)

    def cstr(off):
        return tab[off:tab.index(b'\0', off)]

    def fields(foff):
        base = pcln + foff + entsz
        return list(struct.unpack_from('<iiIIIIII', tab, base))  # name args defer pcsp pcfile pcln npcdata cu

    # gofunc, for inline trees: moduledata is the word that points to the table.
    gofunc = None
    if not v116:
        needle = struct.pack('<Q', tab_addr)
        for name in ('.noptrdata', '.data', '.go.module'):
            s = secs.get(name)
            if not s:
                continue
            data = elf[s['offset']:s['offset'] + s['size']]
            i = data.find(needle)
            while i >= 0 and i % 8:
                i = data.find(needle, i + 1)
            if i >= 0:
                md = s['addr'] + i
                gofunc, = struct.unpack('<Q', read_vaddr(elf, secs, md + (320 if v120 else 304), 8))
                break

    start = next(i for i in range(nfunc) if cstr(funcname + fields(functab(i)[1])[0]) == fname)
    start = max(0, start - count // 2)
    chosen = list(range(start, min(nfunc, start + count)))

    names, name_off = bytearray(), {}

    def add_name(off):
        if off not in name_off:
            name_off[off] = len(names)
            names.extend(cstr(funcname + off) + b'\0')
        return name_off[off]

    new_pctab, pc_off = bytearray(b'\0'), {0: 0}  # offset 0 means "no table"

    def add_table(off):
        if off not in pc_off:
            pc_off[off] = len(new_pctab)
            new_pctab.extend(table_bytes(tab, pctab + off))
        return pc_off[off]

    new_cutab, new_filetab, file_off, cu_map = [], bytearray(), {}, {}

    def add_cu(cuoff, nfiles):
        key = (cuoff, nfiles)
        if key not in cu_map:
            cu_map[key] = len(new_cutab)
            for k in range(nfiles):
                fo, = struct.unpack_from('<I', tab, cu + 4 * (cuoff + k))
                if fo == 0xffffffff:
                    new_cutab.append(fo)
                    continue
                if fo not in file_off:
                    file_off[fo] = len(new_filetab)
                    new_filetab.extend(cstr(filetab + fo) + b'\0')
                new_cutab.append(file_off[fo])
        return cu_map[key]

    records, trees = [], []
    for i in chosen:
        entry, foff = functab(i)
        f = fields(foff)
        name, args, defer, pcsp, pcfile, pclnt, npcdata, cuoff = f
        tail = tab[pcln + foff + entsz + 32:pcln + foff + fixed]  # [startLine], funcID, flag, pad, nfuncdata
        nfuncdata = tail[-1]
        pcdata = list(struct.unpack_from('<%dI' % npcdata, tab, pcln + foff + fixed))
        fd_at = pcln + foff + fixed + 4 * npcdata
        if v116:
            if (tab_addr + fd_at) % 8:
                fd_at += 4
            funcdata = list(struct.unpack_from('<%dQ' % nfuncdata, tab, fd_at))
        else:
            funcdata = list(struct.unpack_from('<%dI' % nfuncdata, tab, fd_at))
        files = table_values(table_bytes(tab, pctab + pcfile)) if pcfile else []
        nfiles = max([v for v in files if v >= 0], default=-1) + 1
        new = [add_name(name), args, defer, add_table(pcsp), add_table(pcfile), add_table(pclnt), npcdata,
               add_cu(cuoff, nfiles) if cuoff != 0xffffffff else cuoff]
        new_pcdata = [add_table(p) for p in pcdata]
        tree = None
        if gofunc is not None and nfuncdata > 3 and funcdata[3] != 0xffffffff and npcdata > 2 and pcdata[2]:
            n = max(table_values(table_bytes(tab, pctab + pcdata[2])), default=-1) + 1
            size = 16 if v120 else 20
            raw = read_vaddr(elf, secs, gofunc + funcdata[3], n * size) if n > 0 else None
            if raw:
                tree = bytearray(raw)
                for k in range(n):  # remap each callee's name offset
                    at = k * size + (4 if v120 else 12)
                    off, = struct.unpack_from('<i', tree, at)
                    struct.pack_into('<i', tree, at, add_name(off))
        records.append((entry, new, tail, new_pcdata, funcdata, tree))
    end_entry = functab(chosen[-1] + 1)[0]

    # Layout: header, funcnametab, cutab, filetab, pctab, functab + _funcs, inline trees.
    hdr = 8 + 8 * nwords
    o_name = hdr
    o_cu = o_name + len(names)
    o_file = o_cu + 4 * len(new_cutab)
    o_pc = o_file + len(new_filetab)
    o_pcln = (o_pc + len(new_pctab) + 7) & ~7
    ftab = bytearray(2 * entsz * (len(records) + 1) + entsz)
    funcs = bytearray()
    fixups = []  # (position in funcs, tree) for inline tree offsets
    for k, (entry, new, tail, pcd, fdata, tree) in enumerate(records):
        while (len(ftab) + len(funcs)) % 8:
            funcs.append(0)
        foff = len(ftab) + len(funcs)
        struct.pack_into('<QQ' if v116 else '<II', ftab, 2 * entsz * k, entry, foff)
        funcs += struct.pack('<Q' if v116 else '<I', entry)
        funcs += struct.pack('<iiIIIIII', *new) + tail + struct.pack('<%dI' % len(pcd), *pcd)
        if v116:
            if (tab_addr + o_pcln + len(ftab) + len(funcs)) % 8:
                funcs += b'\0' * 4
            funcs += struct.pack('<%dQ' % len(fdata), *fdata)
        else:
            if tree is not None:
                fixups.append((len(funcs) + 12, tree))
            funcs += struct.pack('<%dI' % len(fdata), *fdata)
    struct.pack_into('<Q' if v116 else '<I', ftab, 2 * entsz * len(records), end_entry)
    body = bytearray(ftab) + funcs
    o_trees = o_pcln + len(body)
    trees = bytearray()
    for at, tree in fixups:
        while (o_trees + len(trees)) % 4:
            trees.append(0)
        struct.pack_into('<I', body, len(ftab) + at, o_trees + len(trees))
        trees += tree

    words[0] = len(records)
    words[-5:] = [o_name, o_cu, o_file, o_pc, o_pcln]
    out = bytearray(tab[:8]) + struct.pack('<%dQ' % nwords, *words)
    out += names + struct.pack('<%dI' % len(new_cutab), *new_cutab) + new_filetab + new_pctab
    out += b'\0' * (o_pcln - len(out)) + body + trees
    open(outpath, 'wb').write(out)
    print('%s: %d functions from %s, %d bytes, %d inline trees' % (outpath, len(records), path, len(out), len(fixups)))


main()
