import { createHash } from 'node:crypto';
import { closeEvidence, type Executor } from '@firm/db';
import type { EvidenceHasher } from '@firm/gateway';
import { and, eq, sql } from 'drizzle-orm';

/** A file a finished close keeps, as listed (without its content). */
export interface EvidenceFile {
  name: string;
  contentType: string;
  size: number;
  sha256: string;
}

/** The files of a close's evidence, in the order their manifest lists them. */
export const EVIDENCE_FILES = [
  { name: 'financial-packet.pdf', contentType: 'application/pdf' },
  { name: 'checklist.json', contentType: 'application/json' },
  { name: 'reconciliation-status.json', contentType: 'application/json' },
] as const;

export const sha256Of = (content: Buffer | string): string => createHash('sha256').update(content).digest('hex');

/**
 * The SHA-256 of a close's evidence: of its manifest, one line per file (its name and its SHA-256) in the fixed order
 * of EVIDENCE_FILES, so the one hash in the audit trail vouches for every file.
 */
export function manifestSha256(files: readonly { name: string; sha256: string }[]): string {
  const byName = new Map(files.map((f) => [f.name, f.sha256]));
  const lines = EVIDENCE_FILES.map(({ name }) => `${name} ${byName.get(name) ?? 'missing'}`);
  return sha256Of(`${lines.join('\n')}\n`);
}

/** The evidence files of a close of this organization, without their content. */
export async function listEvidence(db: Executor, organizationId: string, closeId: string): Promise<EvidenceFile[]> {
  const rows = await db
    .select({
      name: closeEvidence.name,
      contentType: closeEvidence.contentType,
      // The size alone: a listing does not read the files.
      size: sql<number>`octet_length(${closeEvidence.content})::int`,
      sha256: closeEvidence.sha256,
    })
    .from(closeEvidence)
    .where(and(eq(closeEvidence.organizationId, organizationId), eq(closeEvidence.closeId, closeId)));
  const order = EVIDENCE_FILES.map((f) => f.name as string);
  return rows.sort((a, b) => order.indexOf(a.name) - order.indexOf(b.name));
}

/** One evidence file with its content, or undefined. */
export async function evidenceFile(
  db: Executor,
  organizationId: string,
  closeId: string,
  name: string,
): Promise<(EvidenceFile & { content: Buffer }) | undefined> {
  const [row] = await db
    .select()
    .from(closeEvidence)
    .where(
      and(
        eq(closeEvidence.organizationId, organizationId),
        eq(closeEvidence.closeId, closeId),
        eq(closeEvidence.name, name),
      ),
    );
  return (
    row && {
      name: row.name,
      contentType: row.contentType,
      size: row.content.length,
      sha256: row.sha256,
      content: row.content,
    }
  );
}

/**
 * The manifest hash of a close's evidence as stored now, each file hashed again from its content (not from the hash
 * stored beside it, which whoever altered the content could have changed too). Undefined when the close has no
 * evidence. What `audit verify` compares with the hash its audit event carries.
 */
export async function storedEvidenceSha256(
  db: Executor,
  organizationId: string,
  closeId: string,
): Promise<string | undefined> {
  const rows = await db
    .select({ name: closeEvidence.name, content: closeEvidence.content })
    .from(closeEvidence)
    .where(and(eq(closeEvidence.organizationId, organizationId), eq(closeEvidence.closeId, closeId)));
  if (rows.length === 0) return undefined;
  return manifestSha256(rows.map((r) => ({ name: r.name, sha256: sha256Of(r.content) })));
}

/**
 * What `audit verify` needs to prove a finished close's evidence unchanged: for an audit event on a `Close`, the
 * manifest hash of its stored files, each hashed again. Passed to `verifyAuditChains` (`evidence`), so the gateway
 * reads no table of this package.
 */
export const CLOSE_EVIDENCE_HASHERS: Readonly<Record<string, EvidenceHasher>> = {
  Close: (db, event) =>
    event.organizationId && event.entityId
      ? storedEvidenceSha256(db, event.organizationId, event.entityId)
      : Promise.resolve(undefined),
};
