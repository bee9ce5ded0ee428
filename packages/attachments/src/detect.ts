/** The kinds of file an attachment may be, decided by its bytes (never its name or declared type). */
export const ALLOWED_TYPES = {
  'application/pdf': 'pdf',
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/heic': 'heic',
  'image/tiff': 'tif',
  'text/csv': 'csv',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xlsx',
} as const;

export type AllowedType = keyof typeof ALLOWED_TYPES;

export interface DetectedType {
  /** The media type the bytes are, or `application/octet-stream` when nothing is recognised. */
  mime: string;
  /** A short name of it (`pdf`, `exe`, `unknown`). */
  ext: string;
  allowed: boolean;
}

/** How many leading bytes the detection reads (an XLSX names its `xl/` parts within them). */
export const SNIFF_BYTES = 64 * 1024;

const HEIC_BRANDS = new Set(['heic', 'heix', 'heim', 'heis', 'hevc', 'hevx', 'mif1', 'msf1']);

/** An ISO-BMFF `ftyp` box whose major brand is one of HEIC's (file-type names some of them AVIF or HEIF). */
function isHeic(head: Buffer): boolean {
  if (head.length < 12 || head.toString('latin1', 4, 8) !== 'ftyp') return false;
  return HEIC_BRANDS.has(head.toString('latin1', 8, 12));
}

/** A zip whose entries include the parts of an Excel workbook. */
function isXlsx(head: Buffer): boolean {
  if (head.length < 4 || head.readUInt32LE(0) !== 0x04034b50) return false;
  const text = head.toString('latin1');
  return text.includes('xl/') && (text.includes('[Content_Types].xml') || text.includes('xl/workbook'));
}

/**
 * Text a spreadsheet reads as CSV: valid UTF-8 (the head may cut its last character), no control bytes but tab, CR,
 * LF and form feed, and at least one line that a comma, semicolon or tab splits into fields, its lines splitting alike.
 */
export function looksLikeCsv(head: Buffer, complete: boolean): boolean {
  if (head.length === 0) return false;
  let bytes = head;
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) bytes = bytes.subarray(3);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes, { stream: !complete });
  } catch {
    return false;
  }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0008\u000b\u000e-\u001f\u007f]/.test(text)) return false;
  const lines = text.split(/\r?\n/);
  if (!complete && lines.length > 1) lines.pop(); // the head may cut the last line
  const filled = lines.filter((l) => l.trim() !== '');
  if (filled.length === 0) return false;
  for (const sep of [',', ';', '\t']) {
    const counts = filled.map((l) => l.split(sep).length - 1);
    const first = counts[0] ?? 0;
    if (first === 0) continue;
    // Quoted fields may hold the separator: most lines, not all, need to agree with the first.
    const agreeing = counts.filter((c) => c === first).length;
    if (agreeing / counts.length >= 0.8) return true;
  }
  return false;
}

/** What the file is, from its first bytes (`complete`: they are the whole file). */
export async function detectType(head: Buffer, complete: boolean): Promise<DetectedType> {
  if (isHeic(head)) return { mime: 'image/heic', ext: 'heic', allowed: true };
  if (isXlsx(head)) {
    return { mime: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', ext: 'xlsx', allowed: true };
  }
  // file-type is loaded with the first upload, not by every process that starts.
  const found = head.length > 0 ? await (await import('file-type')).fileTypeFromBuffer(head) : undefined;
  if (found) {
    const mime = found.mime as string;
    return { mime, ext: found.ext, allowed: Object.hasOwn(ALLOWED_TYPES, mime) };
  }
  if (looksLikeCsv(head, complete)) return { mime: 'text/csv', ext: 'csv', allowed: true };
  return { mime: 'application/octet-stream', ext: 'unknown', allowed: false };
}
