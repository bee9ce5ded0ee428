import { randomBytes } from 'node:crypto';
import { link, mkdir, readdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isUuid } from '@firm/core';
import { type AuditKeys, hmacOf, sameDigest } from './audit-keys';

/**
 * A firm's chain head as it was once written: its sequence number and hash, signed with the audit key. A hash chain
 * proves order but not completeness: whoever can delete rows can cut its tail and leave a shorter chain that checks.
 * The anchor is what says how long the chain was, so it is kept where that writer cannot reach: files under
 * AUDIT_ANCHOR_DIR on the API's host (or a volume its processes share), never in the database.
 */
export interface AuditAnchor {
  firmId: string;
  seq: number;
  hash: string;
  keyId: string;
  writtenAt: string;
  mac: string;
}

/** A file of a firm's anchors that cannot be trusted: altered, unreadable, or signed with a key not configured. */
export interface AnchorProblem {
  file: string;
  seq: number;
  kind: 'anchor_invalid' | 'unknown_key';
  problem: string;
}

const ANCHOR_FILE = /^(\d{16})\.json$/;
const fileOf = (seq: number) => `${String(seq).padStart(16, '0')}.json`;

const codeOf = (err: unknown) => (err as NodeJS.ErrnoException).code;

const macMessage = (a: Omit<AuditAnchor, 'mac'>) =>
  `agent-audit-anchor:v1\n${a.keyId}\n${a.firmId}\n${a.seq}\n${a.hash}\n${a.writtenAt}`;

/**
 * Each firm's anchors, one file per anchored sequence number in `<dir>/<firmId>/`. The latest is the one with the
 * highest number, and that number never goes down, whatever several processes write at once and without any lock
 * between them: a file appears whole and only once (written aside, then linked into place, which fails rather than
 * replace one already there), and a writer deletes only files below one it has seen (its own, or a later one that
 * verifies), so the highest file is never deleted by anyone. Files are not fsynced, and appends anchor in the
 * background (`anchorSoon`): after a crash the anchor may be a few events behind, which hides nothing that was
 * anchored before it.
 */
export class AnchorStore {
  private readonly firmDirs = new Set<string>();
  /** Per firm: the head waiting to be anchored, and the write under way (at most one per firm per process). */
  private readonly waiting = new Map<string, { head: { seq: number; hash: string }; now: Date }>();
  private readonly writing = new Map<string, Promise<void>>();
  /** Why the last anchoring in the background failed; cleared by the next anchoring that succeeds. */
  private failure: unknown = null;

  constructor(
    readonly dir: string,
    private readonly keys: AuditKeys,
  ) {}

  /**
   * Anchors `head` as the firm's latest, unless a later anchor is there already, and removes the ones it supersedes.
   * Returns the firm's latest anchor afterwards: `head`'s own, or a later one that verifies.
   */
  async advance(firmId: string, head: { seq: number; hash: string }, now = new Date()): Promise<AuditAnchor> {
    const anchor = this.sign({ firmId, seq: head.seq, hash: head.hash, writtenAt: now.toISOString() });
    const dir = await this.firmDir(firmId);
    const name = fileOf(head.seq);
    const aside = join(dir, `.${name}.${process.pid}.${randomBytes(6).toString('hex')}`);
    const text = `${JSON.stringify(anchor)}\n`;
    try {
      await writeFile(aside, text, { mode: 0o600 });
    } catch (err) {
      // The directory went away (removed by hand): made again, once.
      if (codeOf(err) !== 'ENOENT') throw err;
      this.firmDirs.delete(firmId);
      await this.firmDir(firmId);
      await writeFile(aside, text, { mode: 0o600 });
    }
    try {
      // An anchor already there for this number is kept: if it names another hash, the chain was rewritten, and
      // that file is the evidence.
      await link(aside, join(dir, name));
    } catch (err) {
      if (codeOf(err) !== 'EEXIST') throw err;
    } finally {
      await unlink(aside);
    }
    const names = await this.names(firmId);
    let latest = anchor;
    const highest = names[names.length - 1];
    if (highest !== undefined && highest.seq > head.seq) {
      const read = await this.read(firmId, highest.file);
      if (read && 'anchor' in read) latest = read.anchor;
    }
    await Promise.all(
      names
        .filter((n) => n.seq < latest.seq)
        .map((n) =>
          unlink(join(dir, n.file)).catch((err: unknown) => {
            if (codeOf(err) !== 'ENOENT') throw err;
          }),
        ),
    );
    return latest;
  }

  /**
   * Anchors `head` in the background, off the appending request's path: while a firm's anchor is being written, later
   * heads wait and only the latest of them is written next, so a busy chain costs one file at a time, not one per
   * event. `onLatest` gets the firm's latest anchor after each write (a later one is another process's, or there were
   * deletions below it). A failure is kept for `failed()` and retried with the next head.
   */
  anchorSoon(
    firmId: string,
    head: { seq: number; hash: string },
    now: Date,
    onLatest: (latest: AuditAnchor) => void,
  ): void {
    const queued = this.waiting.get(firmId);
    if (!queued || queued.head.seq < head.seq) this.waiting.set(firmId, { head, now });
    if (this.writing.has(firmId)) return;
    const run = (async () => {
      for (let next = this.waiting.get(firmId); next; next = this.waiting.get(firmId)) {
        this.waiting.delete(firmId);
        try {
          onLatest(await this.advance(firmId, next.head, next.now));
          this.failure = null;
        } catch (err) {
          this.failure = err;
        }
      }
    })().finally(() => this.writing.delete(firmId));
    this.writing.set(firmId, run);
  }

  /** The error of the last background anchoring, while no later one has succeeded. */
  failed(): unknown {
    return this.failure;
  }

  /**
   * After a failed background anchoring: anchors `head` (the firm's head as this process knows it) now, and throws if
   * that fails too, so appends stop while anchors cannot be written and go on once they can.
   */
  async recover(firmId: string, head: { seq: number; hash: string } | null): Promise<void> {
    await this.settled();
    if (!this.failure) return;
    if (head) await this.advance(firmId, head);
    this.failure = null;
  }

  /** Resolves once every anchor asked for so far is written (verification, shutdown and tests wait for it). */
  async settled(): Promise<void> {
    while (this.writing.size > 0) await Promise.all(this.writing.values());
  }

  /** The firm's latest anchor that verifies, and the later files that do not (newest first). */
  async inspect(firmId: string): Promise<{ latest: AuditAnchor | null; problems: AnchorProblem[] }> {
    for (let attempt = 0; ; attempt++) {
      const problems: AnchorProblem[] = [];
      let vanished = false;
      for (const { file, seq } of (await this.names(firmId)).reverse()) {
        const read = await this.read(firmId, file);
        // Removed since the listing: a later anchor superseded it, so list again.
        if (read === null) {
          vanished = true;
          break;
        }
        if ('anchor' in read) return { latest: read.anchor, problems };
        problems.push({ file: join(this.dir, firmId, file), seq, ...read });
      }
      if (!vanished || attempt >= 20) return { latest: null, problems };
    }
  }

  /** The firm's latest anchor that verifies. */
  async latest(firmId: string): Promise<AuditAnchor | null> {
    return (await this.inspect(firmId)).latest;
  }

  /** The firms that have an anchor directory. */
  async firms(): Promise<string[]> {
    try {
      return (await readdir(this.dir)).filter(isUuid);
    } catch (err) {
      if (codeOf(err) === 'ENOENT') return [];
      throw err;
    }
  }

  private sign(a: Omit<AuditAnchor, 'mac' | 'keyId'>): AuditAnchor {
    const unsigned = { ...a, keyId: this.keys.current };
    return { ...unsigned, mac: hmacOf(this.keys, unsigned.keyId, macMessage(unsigned)) as string };
  }

  private async firmDir(firmId: string): Promise<string> {
    const dir = join(this.dir, firmId);
    if (!this.firmDirs.has(firmId)) {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      this.firmDirs.add(firmId);
    }
    return dir;
  }

  /** The firm's anchor files, lowest number first. */
  private async names(firmId: string): Promise<{ file: string; seq: number }[]> {
    let files: string[];
    try {
      files = await readdir(join(this.dir, firmId));
    } catch (err) {
      if (codeOf(err) === 'ENOENT') return [];
      throw err;
    }
    return files
      .flatMap((file) => {
        const m = ANCHOR_FILE.exec(file);
        return m ? [{ file, seq: Number(m[1]) }] : [];
      })
      .sort((a, b) => a.seq - b.seq);
  }

  /** One anchor file: the anchor when it verifies, else why not; null when it is gone. */
  private async read(
    firmId: string,
    file: string,
  ): Promise<{ anchor: AuditAnchor } | Pick<AnchorProblem, 'kind' | 'problem'> | null> {
    let text: string;
    try {
      text = await readFile(join(this.dir, firmId, file), 'utf8');
    } catch (err) {
      if (codeOf(err) === 'ENOENT') return null;
      throw err;
    }
    let a: AuditAnchor;
    try {
      a = JSON.parse(text) as AuditAnchor;
    } catch {
      return { kind: 'anchor_invalid', problem: 'is not an anchor: it was altered' };
    }
    if (
      typeof a !== 'object' ||
      a === null ||
      a.firmId !== firmId ||
      fileOf(a.seq) !== file ||
      typeof a.hash !== 'string' ||
      typeof a.keyId !== 'string' ||
      typeof a.writtenAt !== 'string' ||
      typeof a.mac !== 'string'
    ) {
      return { kind: 'anchor_invalid', problem: 'is not an anchor of this firm and number: it was altered' };
    }
    const expected = hmacOf(this.keys, a.keyId, macMessage(a));
    if (expected === undefined) {
      return { kind: 'unknown_key', problem: `is signed with audit key ${a.keyId}, which is not configured` };
    }
    if (!sameDigest(expected, a.mac))
      return { kind: 'anchor_invalid', problem: 'does not match its HMAC: it was altered' };
    const { firmId: f, seq, hash, keyId, writtenAt, mac } = a;
    return { anchor: { firmId: f, seq, hash, keyId, writtenAt, mac } };
  }
}
