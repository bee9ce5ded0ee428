import { attachmentsOf } from '@firm/attachments';
import { largeRowsInPeriod, reconciliationStatus } from '@firm/banking';
import { DomainError, type ErrorDetail } from '@firm/core';
import { closeEvidence, closes, type Db, type Tx } from '@firm/db';
import { type AuditTrail, appendAuditEvent } from '@firm/gateway';
import { addDays, getBookSettings, type LedgerContext, nowOf, recordEvent, setBooksClosedThrough } from '@firm/ledger';
import { renderFinancialPacket } from '@firm/reports/export';
import { and, eq } from 'drizzle-orm';
import { type CloseItem, type CloseRow, closeItems, closeOf } from './closes';
import { EVIDENCE_FILES, manifestSha256, sha256Of } from './evidence';

/**
 * Finishes an open close when no blocking item is open (else 409 CLOSE_BLOCKED listing them): closes the books through
 * the period end with the ledger's one rule (never moving a later date back), renders the evidence (the financial
 * packet PDF, the checklist with its sign-offs, the reconciliation status), stores each file with its SHA-256 and
 * the close with the manifest's SHA-256, and records close.finished. One transaction, the close's row locked: if
 * rendering fails nothing is written and the books stay open. Who may finish is the caller's rule (owners and admins).
 */
export async function finishClose(
  db: Db,
  ctx: LedgerContext,
  organizationId: string,
  closeId: string,
): Promise<CloseRow> {
  return db.transaction(async (tx) => {
    const close = await closeOf(tx, organizationId, closeId, true);
    if (close.status !== 'open') throw new DomainError('INVALID_STATE', `the close is ${close.status}, not open`);
    const items = await closeItems(tx, close);
    const blocking = items.filter((i) => i.severity === 'blocking' && i.signoff === null);
    if (blocking.length > 0) {
      throw new DomainError(
        'CLOSE_BLOCKED',
        `${blocking.length} blocking item${blocking.length === 1 ? ' is' : 's are'} open: resolve or sign off first`,
        blocking.map((i) => ({ field: 'items', message: i.message, itemKey: i.key, kind: i.kind }) as ErrorDetail),
      );
    }
    const { booksClosedThrough } = await getBookSettings(tx, organizationId);
    if (booksClosedThrough === null || booksClosedThrough < close.periodEnd) {
      await setBooksClosedThrough(tx, ctx, organizationId, close.periodEnd);
    }
    const finishedAt = nowOf(ctx);
    const files = await renderEvidence(tx, close, items, { ...ctx.actor, at: finishedAt });
    const stored = EVIDENCE_FILES.map(({ name, contentType }) => {
      const content = files[name];
      return { closeId, organizationId, name, contentType, content, sha256: sha256Of(content), createdAt: finishedAt };
    });
    await tx.insert(closeEvidence).values(stored);
    const evidenceSha256 = manifestSha256(stored);
    const [finished] = await tx
      .update(closes)
      .set({
        status: 'finished',
        finishedByKind: ctx.actor.kind,
        finishedById: ctx.actor.id,
        finishedAt,
        evidenceSha256,
        updatedAt: finishedAt,
      })
      .where(and(eq(closes.organizationId, organizationId), eq(closes.id, closeId)))
      .returning();
    await recordEvent(tx, ctx, {
      organizationId,
      action: 'close.finished',
      resourceType: 'close',
      resourceId: closeId,
      data: { periodStart: close.periodStart, periodEnd: close.periodEnd, evidenceSha256 },
      payload: {
        closeId,
        organizationId,
        periodStart: close.periodStart,
        periodEnd: close.periodEnd,
        booksClosedThrough: close.periodEnd > (booksClosedThrough ?? '') ? close.periodEnd : booksClosedThrough,
        evidenceSha256,
      },
    });
    return finished as CloseRow;
  });
}

type EvidenceName = (typeof EVIDENCE_FILES)[number]['name'];

const json = (value: unknown) => Buffer.from(`${JSON.stringify(value, null, 2)}\n`);

/** The evidence's files, read in the finishing transaction so they show the books as they were closed. */
async function renderEvidence(
  tx: Tx,
  close: CloseRow,
  items: CloseItem[],
  finished: { kind: string; id: string; at: Date },
): Promise<Record<EvidenceName, Buffer>> {
  const packet = await renderFinancialPacket(tx, close.organizationId, {
    startDate: close.periodStart,
    endDate: close.periodEnd,
    format: 'pdf',
  });
  const pdf = Buffer.concat((await packet.toArray()) as Buffer[]);
  const reconciliations = await reconciliationStatus(tx, close.organizationId, close.periodEnd);
  // The source documents of the period's bank and card rows (on the row or on the entry it was posted as).
  const rows = await largeRowsInPeriod(tx, close.organizationId, close.periodStart, close.periodEnd, 0);
  const attachments = await attachmentsOf(
    tx,
    close.organizationId,
    rows.flatMap((r) => [
      { entityType: 'bank_transaction' as const, entityId: r.id },
      ...(r.journalEntryId ? [{ entityType: 'journal_entry' as const, entityId: r.journalEntryId }] : []),
    ]),
  );
  return {
    'financial-packet.pdf': pdf,
    'checklist.json': json({
      closeId: close.id,
      organizationId: close.organizationId,
      periodStart: close.periodStart,
      periodEnd: close.periodEnd,
      finishedBy: { kind: finished.kind, id: finished.id },
      finishedAt: finished.at.toISOString(),
      items,
      attachments: attachments.map((a) => ({
        id: a.id,
        fileName: a.fileName,
        contentType: a.contentType,
        size: a.sizeBytes,
        sha256: a.sha256,
        links: a.links.map((l) => ({ entityType: l.entityType, entityId: l.entityId })),
      })),
    }),
    'reconciliation-status.json': json({ asOf: close.periodEnd, accounts: reconciliations }),
  };
}

/**
 * Reopens a finished close with a reason: moves the books-closed date back to the day before its period (refused with
 * 409 INVALID_STATE while the books are closed beyond its period end: a later period is closed; reopen that first),
 * marks it reopened and keeps its evidence. Records close.reopened. Who may reopen is the caller's rule (owners).
 */
export async function reopenClose(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  closeId: string,
  reason: string,
): Promise<CloseRow> {
  const close = await closeOf(tx, organizationId, closeId, true);
  if (close.status !== 'finished') throw new DomainError('INVALID_STATE', `the close is ${close.status}, not finished`);
  const { booksClosedThrough } = await getBookSettings(tx, organizationId);
  if (booksClosedThrough !== null && booksClosedThrough > close.periodEnd) {
    throw new DomainError(
      'INVALID_STATE',
      `the books are closed through ${booksClosedThrough}, beyond this period: reopen the later period first`,
    );
  }
  const booksClosedNow = addDays(close.periodStart, -1);
  await setBooksClosedThrough(tx, ctx, organizationId, booksClosedNow);
  const at = nowOf(ctx);
  const [reopened] = await tx
    .update(closes)
    .set({ status: 'reopened', reopenedById: ctx.actor.id, reopenedAt: at, reopenReason: reason, updatedAt: at })
    .where(and(eq(closes.organizationId, organizationId), eq(closes.id, closeId)))
    .returning();
  await recordEvent(tx, ctx, {
    organizationId,
    action: 'close.reopened',
    resourceType: 'close',
    resourceId: closeId,
    data: { reason, booksClosedThrough: booksClosedNow },
    payload: { closeId, organizationId, periodStart: close.periodStart, periodEnd: close.periodEnd, reason },
  });
  return reopened as CloseRow;
}

/**
 * Records a finish or a reopening in the firm's hash-chained agent audit trail, after its transaction committed: the
 * chain is appended on its own connection (the embedded database has one, held by the transaction until it ends), and
 * an event must not vouch for evidence a rolled-back transaction never stored. A finish's event carries the evidence's
 * SHA-256, which `audit verify` checks against the stored files (`CLOSE_EVIDENCE_HASHERS`).
 */
export function auditClose(
  db: Db,
  trail: AuditTrail,
  ctx: LedgerContext,
  close: CloseRow,
  operation: 'closes.finish' | 'closes.reopen',
): Promise<unknown> {
  return appendAuditEvent(db, trail, {
    firmId: close.firmId,
    organizationId: close.organizationId,
    actorKind: ctx.actor.kind,
    actorId: ctx.actor.id,
    actorName: null,
    operation,
    entityType: 'Close',
    entityId: close.id,
    outcome: 'succeeded',
    statusCode: 200,
    errorCode: null,
    requestId: ctx.requestId ?? null,
    dryRun: false,
    syncTokenBefore: null,
    syncTokenAfter: null,
    note: operation === 'closes.reopen' ? close.reopenReason : null,
    evidenceSha256: operation === 'closes.finish' ? close.evidenceSha256 : null,
  });
}
