#include "binary/elf_file.hpp"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include <cerrno>
#include <cstring>

namespace goscope {

Result<std::shared_ptr<ElfFile>> ElfFile::open(const std::string& path) {
  std::shared_ptr<ElfFile> f(new ElfFile());
  f->path_ = path;
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
  // writer for ever; load() then refuses anything but a regular file.
  f->fd_ = UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!f->fd_.valid()) {
    int err = errno;
    if (err == ENOENT || err == ENOTDIR)
      return fail(ErrorKind::NotFound, path + ": no such file");
    if (err == EACCES || err == EPERM)
      return fail(ErrorKind::Permission, path + ": permission denied", "run as root");
    return fail(ErrorKind::NotFound, path + ": " + std::strerror(err));
  }
  if (auto r = f->load(); !r) return r.failure();
  return f;
}

ElfFile::~ElfFile() {
  if (elf_) elf_end(elf_);
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

Result<void> ElfFile::load() {
  struct stat st{};
  if (::fstat(fd_.get(), &st) != 0 || !S_ISREG(st.st_mode))
    return fail(ErrorKind::BadTarget, path_ + ": not a regular file");
  identity_ = FileIdentity::of(st);
  size_ = static_cast<size_t>(st.st_size);
  if (size_ < EI_NIDENT) return fail(ErrorKind::BadTarget, path_ + ": not an ELF file");
  // MAP_SHARED (read-only: the fd is O_RDONLY), not MAP_PRIVATE: the kernel
  // installs a pid-0 uprobe's int3 into every *private* executable-capable
  // mapping of the file (uprobes.c, valid_vma: VM_MAYSHARE excludes a
  // mapping), goscope's own included. A private mapping would read int3
  // where another session (or this one) has probes, and every probed page
  // became an anonymous copy: 25 MB of RSS and kernel time for 80,000
  // probes in kubectl. A shared mapping reads the page cache,
  // which uprobes never change.
  void* m = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd_.get(), 0);
  if (m == MAP_FAILED) return fail(ErrorKind::Internal, path_ + ": mmap failed: " + std::strerror(errno));
  data_ = static_cast<const uint8_t*>(m);
  if (std::memcmp(data_, ELFMAG, SELFMAG) != 0)
    return fail(ErrorKind::BadTarget, path_ + ": not an ELF file");

  elf_version(EV_CURRENT);
  // ELF_C_READ, not ELF_C_READ_MMAP: libelf reads the headers and, when
  // asked, a section (symtab, DWARF) with pread, instead of a second private
  // mapping of the whole file, which the kernel's pid-0 uprobes would fill
  // with copied pages (see the mmap above). libelf keeps using fd_, open
  // while this object lives.
  elf_ = elf_begin(fd_.get(), ELF_C_READ, nullptr);
  if (!elf_ || elf_kind(elf_) != ELF_K_ELF)
    return fail(ErrorKind::BadTarget, path_ + ": not an ELF file");
  GElf_Ehdr eh;
  if (!gelf_getehdr(elf_, &eh)) return fail(ErrorKind::BadTarget, path_ + ": unreadable ELF header");
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64)
    return fail(ErrorKind::BadTarget, path_ + ": not an x86-64 ELF file",
                "goscope supports linux/amd64 Go programs");
  isDyn_ = eh.e_type == ET_DYN;
  machine_ = eh.e_machine;
  entry_ = eh.e_entry;

  size_t phnum = 0;
  elf_getphdrnum(elf_, &phnum);
  for (size_t i = 0; i < phnum; i++) {
    GElf_Phdr ph;
    if (!gelf_getphdr(elf_, static_cast<int>(i), &ph)) continue;
    segments_.push_back({ph.p_type, ph.p_flags, ph.p_vaddr, ph.p_offset, ph.p_filesz, ph.p_memsz, ph.p_align});
  }

  size_t shstrndx = 0;
  elf_getshdrstrndx(elf_, &shstrndx);
  // (Sections whose headers lie past the end are not listed by libelf.)
  for (Elf_Scn* scn = elf_nextscn(elf_, nullptr); scn; scn = elf_nextscn(elf_, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) continue;
    const char* name = elf_strptr(elf_, shstrndx, sh.sh_name);
    sections_.push_back({name ? name : "", sh.sh_type, sh.sh_flags, sh.sh_addr, sh.sh_offset, sh.sh_size});

    if (sh.sh_type == SHT_SYMTAB) {
      hasSymtab_ = true;
      Elf_Data* d = elf_getdata(scn, nullptr);
      size_t n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
      for (size_t k = 0; d && k < n; k++) {
        GElf_Sym sym;
        if (!gelf_getsym(d, static_cast<int>(k), &sym)) continue;
        const char* sn = elf_strptr(elf_, sh.sh_link, sym.st_name);
        symbols_.push_back({sn ? sn : "", sym.st_value, sym.st_size, static_cast<uint8_t>(GELF_ST_TYPE(sym.st_info)),
                            static_cast<uint8_t>(GELF_ST_BIND(sym.st_info)), sym.st_shndx});
      }
    } else if (sh.sh_type == SHT_RELA) {
      Elf_Data* d = elf_getdata(scn, nullptr);
      size_t n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
      for (size_t k = 0; d && k < n; k++) {
        GElf_Rela r;
        if (!gelf_getrela(d, static_cast<int>(k), &r)) continue;
        if (GELF_R_TYPE(r.r_info) == R_X86_64_RELATIVE) relative_[r.r_offset] = static_cast<uint64_t>(r.r_addend);
      }
    }
  }
  noteTruncation(eh.e_shoff, eh.e_shnum, eh.e_shentsize);
  return {};
}

void ElfFile::noteTruncation(uint64_t shoff, uint64_t shnum, uint64_t shentsize) {
  Truncation t;
  t.size = size_;
  auto past = [&](uint64_t offset, uint64_t len) {
    const uint64_t end = offset + len < offset ? UINT64_MAX : offset + len;  // (no wrap-around)
    t.described = std::max(t.described, end);
    return end > size_;
  };
  // (e_shnum 0 with a table: the count is in section 0's header, one entry at least.)
  if (shoff != 0 && past(shoff, std::max<uint64_t>(shnum, 1) * shentsize)) t.missing.push_back("the section headers");
  for (size_t i = 0; i < segments_.size(); i++) {
    const Segment& p = segments_[i];
    if (p.type != PT_LOAD || !past(p.offset, p.filesz)) continue;
    std::string rwx = {p.flags & PF_R ? 'r' : '-', p.flags & PF_W ? 'w' : '-', p.flags & PF_X ? 'x' : '-'};
    if (p.offset >= size_)
      t.missing.push_back("all of segment " + std::to_string(i) + " (" + rwx + ")");
    else
      t.missing.push_back("the last " + std::to_string(p.offset + p.filesz - size_) + " bytes of segment " +
                          std::to_string(i) + " (" + rwx + ")");
  }
  for (size_t i = 0; i < sections_.size(); i++) {  // (allocated ones are in a segment above)
    const Section& s = sections_[i];
    if (s.type != SHT_NOBITS && (s.flags & SHF_ALLOC) == 0 && past(s.offset, s.size))
      t.missing.push_back(s.name.empty() ? "section " + std::to_string(i + 1) : s.name);  // (its name is gone too)
  }
  if (!t.missing.empty()) truncation_ = std::move(t);
}

const ElfFile::Section* ElfFile::section(std::string_view name) const {
  for (const auto& s : sections_)
    if (s.name == name) return &s;
  return nullptr;
}

std::span<const uint8_t> ElfFile::sectionBytes(const Section& s) const {
  if (s.type == SHT_NOBITS || s.offset > size_ || s.size > size_ - s.offset) return {};
  return {data_ + s.offset, s.size};
}

uint64_t ElfFile::firstLoadVaddr() const {
  uint64_t lo = UINT64_MAX;
  for (const auto& p : segments_)
    if (p.type == PT_LOAD && p.vaddr - p.offset < lo) lo = p.vaddr - p.offset;
  return lo == UINT64_MAX ? 0 : lo & ~uint64_t{0xfff};
}

std::optional<uint64_t> ElfFile::vaddrToOffset(uint64_t vaddr) const {
  for (const auto& p : segments_) {
    if (p.type != PT_LOAD) continue;
    if (vaddr >= p.vaddr && vaddr < p.vaddr + p.filesz) return p.offset + (vaddr - p.vaddr);
  }
  return std::nullopt;
}

void ElfFile::releasePages(size_t offset, size_t len) const {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t from = (offset + page - 1) / page * page;  // whole pages inside the range only
  const size_t to = std::min(size_, offset + len) / page * page;
  if (!data_ || from >= to) return;
  ::madvise(const_cast<uint8_t*>(data_) + from, to - from, MADV_DONTNEED);
}

std::optional<std::span<const uint8_t>> ElfFile::readVaddr(uint64_t vaddr, size_t len) const {
  for (const auto& p : segments_) {
    if (p.type != PT_LOAD) continue;
    if (vaddr < p.vaddr || vaddr >= p.vaddr + p.filesz) continue;
    uint64_t avail = p.vaddr + p.filesz - vaddr;
    if (len > avail) return std::nullopt;
    uint64_t off = p.offset + (vaddr - p.vaddr);
    if (off + len > size_) return std::nullopt;
    return std::span<const uint8_t>(data_ + off, len);
  }
  return std::nullopt;
}

std::optional<uint64_t> ElfFile::readPointer(uint64_t vaddr) const {
  if (auto it = relative_.find(vaddr); it != relative_.end()) return it->second;
  auto b = readVaddr(vaddr, 8);
  if (!b) return std::nullopt;
  uint64_t v;
  std::memcpy(&v, b->data(), 8);
  return v;
}

}  // namespace goscope
