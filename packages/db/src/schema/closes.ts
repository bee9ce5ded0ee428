import { sql } from 'drizzle-orm';
import {
  boolean,
  check,
  customType,
  date,
  foreignKey,
  index,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';
import { firms } from './firms';
import { organizations } from './organizations';

const bytea = customType<{ data: Buffer; driverData: Buffer }>({ dataType: () => 'bytea' });

export type CloseStatus = 'open' | 'finished' | 'reopened';

/**
 * A company's month-end close (or any period within a fiscal year): opened, its checklist computed from the books on
 * every read, finished by an owner or admin (the books closed through `period_end`, the evidence stored and its
 * SHA-256 in the agent audit trail), and possibly reopened with a reason. One open close per company and period.
 */
export const closes = pgTable(
  'closes',
  {
    id: uuid('id').notNull(),
    firmId: uuid('firm_id')
      .notNull()
      .references(() => firms.id),
    organizationId: uuid('organization_id')
      .notNull()
      .references(() => organizations.id),
    periodStart: date('period_start').notNull(),
    periodEnd: date('period_end').notNull(),
    status: text('status').$type<CloseStatus>().notNull().default('open'),
    openedByKind: text('opened_by_kind').notNull(),
    openedById: text('opened_by_id').notNull(),
    openedAt: timestamp('opened_at', { withTimezone: true }).notNull().defaultNow(),
    finishedByKind: text('finished_by_kind'),
    finishedById: text('finished_by_id'),
    finishedAt: timestamp('finished_at', { withTimezone: true }),
    /** The SHA-256 of the stored evidence's manifest (each file's name and SHA-256), once finished. */
    evidenceSha256: text('evidence_sha256'),
    reopenedById: text('reopened_by_id'),
    reopenedAt: timestamp('reopened_at', { withTimezone: true }),
    reopenReason: text('reopen_reason'),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ name: 'closes_pkey', columns: [t.organizationId, t.id] }),
    index('closes_org_period_idx').on(t.organizationId, t.periodEnd),
    index('closes_firm_period_idx').on(t.firmId, t.periodEnd),
    uniqueIndex('closes_one_open')
      .on(t.organizationId, t.periodStart, t.periodEnd)
      .where(sql`${t.status} = 'open'`),
    check('closes_status', sql`${t.status} in ('open', 'finished', 'reopened')`),
    check('closes_period', sql`${t.periodStart} <= ${t.periodEnd}`),
  ],
);

/**
 * A checklist item a person judged fine as it is: the item is known by its key (its rule and the ids that are its
 * evidence), so the same problem stays signed off on every recomputation and a new one is not.
 */
export const closeSignoffs = pgTable(
  'close_signoffs',
  {
    closeId: uuid('close_id').notNull(),
    organizationId: uuid('organization_id')
      .notNull()
      .references(() => organizations.id),
    itemKey: text('item_key').notNull(),
    kind: text('kind').notNull(),
    note: text('note').notNull(),
    signedByKind: text('signed_by_kind').notNull(),
    signedById: text('signed_by_id').notNull(),
    signedAt: timestamp('signed_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ name: 'close_signoffs_pkey', columns: [t.organizationId, t.closeId, t.itemKey] }),
    foreignKey({
      name: 'close_signoffs_close_fk',
      columns: [t.organizationId, t.closeId],
      foreignColumns: [closes.organizationId, closes.id],
    }),
  ],
);

/** A comment on a close or one of its items, by a person or an agent. */
export const closeComments = pgTable(
  'close_comments',
  {
    id: uuid('id').notNull(),
    closeId: uuid('close_id').notNull(),
    organizationId: uuid('organization_id')
      .notNull()
      .references(() => organizations.id),
    itemKey: text('item_key'),
    authorKind: text('author_kind').notNull(),
    authorId: text('author_id').notNull(),
    body: text('body').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ name: 'close_comments_pkey', columns: [t.organizationId, t.id] }),
    index('close_comments_close_idx').on(t.closeId, t.createdAt),
    foreignKey({
      name: 'close_comments_close_fk',
      columns: [t.organizationId, t.closeId],
      foreignColumns: [closes.organizationId, closes.id],
    }),
  ],
);

/** The files a finished close keeps as its evidence: the financial packet PDF, the checklist, the reconciliations. */
export const closeEvidence = pgTable(
  'close_evidence',
  {
    closeId: uuid('close_id').notNull(),
    organizationId: uuid('organization_id')
      .notNull()
      .references(() => organizations.id),
    name: text('name').notNull(),
    contentType: text('content_type').notNull(),
    content: bytea('content').notNull(),
    sha256: text('sha256').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ name: 'close_evidence_pkey', columns: [t.organizationId, t.closeId, t.name] }),
    foreignKey({
      name: 'close_evidence_close_fk',
      columns: [t.organizationId, t.closeId],
      foreignColumns: [closes.organizationId, closes.id],
    }),
  ],
);

/** A firm's own setting of one checklist rule: off (advisory rules only) or with its thresholds tuned. */
export const closeRuleSettings = pgTable(
  'close_rule_settings',
  {
    firmId: uuid('firm_id')
      .notNull()
      .references(() => firms.id),
    kind: text('kind').notNull(),
    enabled: boolean('enabled').notNull().default(true),
    thresholds: jsonb('thresholds').$type<Record<string, number>>().notNull().default({}),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.firmId, t.kind] })],
);
