import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  checkSchedule,
  createScheduledEntry,
  deleteScheduledEntry,
  getScheduledEntry,
  listScheduledEntries,
  pauseScheduledEntry,
  resumeScheduledEntry,
  type Schedule,
  type ScheduledEntry,
  updateScheduledEntry,
} from '@firm/ledger';
import { Type } from 'typebox';
import { errorResponses } from '../../errors/responses';
import { IdempotencyHeaders, runIdempotent } from '../../plugins/idempotency';
import { ledgerContext } from '../context';
import {
  CreateScheduledEntryBody,
  ScheduledEntryList,
  ScheduledEntryOne,
  ScheduledEntryParams,
  UpdateScheduledEntryBody,
} from './schemas';

const tags = ['scheduled-journal-entries'];
const WRITE_ERRORS = errorResponses(409, 415, 422);

/** Dates as JSON: the schema serializes strings. */
const presented = (e: ScheduledEntry) => ({
  ...e,
  nextRun: e.nextRun && { ...e.nextRun, notBefore: e.nextRun.notBefore?.toISOString() ?? null },
  createdAt: e.createdAt.toISOString(),
  updatedAt: e.updatedAt.toISOString(),
  history: e.history.map((r) => ({ ...r, at: r.at.toISOString() })),
});

/**
 * Has the ledger judge the schedule of a body (merged over the template's, for a change) before the schema does: the
 * schema's conditionals (which day goes with which frequency) say the same, but a refusal of theirs would only name
 * the branch that failed, where the ledger names the field and why (`schedule.dayOfMonth`: a weekly schedule runs
 * on a dayOfWeek).
 */
function judgeScheduleFirst(body: unknown, current?: Schedule): void {
  const schedule = (body as { schedule?: unknown } | null | undefined)?.schedule;
  if (schedule && typeof schedule === 'object' && !Array.isArray(schedule)) checkSchedule({ ...current, ...schedule });
}

/**
 * Journal entries posted on a schedule (accruals, depreciation, rent): the worker posts each occurrence exactly once,
 * through the ledger's idempotent posting path, and catches up missed ones in order.
 */
export const scheduledEntryRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.database.db;

  app.get(
    '/scheduled-journal-entries',
    {
      config: { scope: 'entries:read', organization: 'header' },
      schema: {
        tags,
        summary: 'List scheduled journal entries',
        description: 'Every template of the organization (deleted ones aside), by name, each with its next run.',
        response: { 200: ScheduledEntryList },
      },
    },
    async (request) => ({ data: (await listScheduledEntries(db(), request.organization.id)).map(presented) }),
  );

  app.post(
    '/scheduled-journal-entries',
    {
      config: { scope: 'entries:write', organization: 'header' },
      preValidation: async (request) => judgeScheduleFirst(request.body),
      schema: {
        tags,
        summary: 'Create a scheduled journal entry',
        description:
          'A template (lines, memo) and its schedule. Checked as its runs will post it: the lines must balance ' +
          '(422 UNBALANCED_ENTRY) and name active accounts of the organization (422 INVALID_ACCOUNT); the schedule ' +
          'must be able to run (400 VALIDATION_ERROR naming schedule.<field>: a dayOfMonth on a weekly schedule, ' +
          'an end before the start, a startDate before the previous fiscal year...), its first entry after the ' +
          'books-closed date (422 PERIOD_CLOSED). The worker posts every occurrence from startDate on, on the entry ' +
          'date the weekend rule gives, under the idempotency key `<id>:<occurrence>` (route ' +
          'scheduled-journal-entries), each exactly once; missed occurrences (a startDate in the past, the worker was ' +
          'down) are caught up in order, at most 12 of one template in a round of the worker (a minute apart by ' +
          'default), firms and templates taking turns, so no backlog holds back what is due elsewhere. A failed run ' +
          '(closed period, archived account) is recorded in history and lastError and retried after 15 minutes, 1, ' +
          '4 and 24 hours, then daily; later occurrences wait for it. Requires Idempotency-Key.',
        headers: IdempotencyHeaders,
        body: CreateScheduledEntryBody,
        response: { 201: ScheduledEntryOne, ...WRITE_ERRORS },
      },
    },
    async (request, reply) =>
      runIdempotent(request, reply, async (tx) => ({
        status: 201,
        body: {
          data: presented(
            await createScheduledEntry(tx, ledgerContext(request), request.organization.id, request.body),
          ),
        },
      })),
  );

  app.get(
    '/scheduled-journal-entries/:id',
    {
      config: { scope: 'entries:read', organization: 'header' },
      schema: {
        tags,
        summary: 'A scheduled journal entry',
        description: 'With its next run and its latest runs (history).',
        params: ScheduledEntryParams,
        response: { 200: ScheduledEntryOne },
      },
    },
    async (request) => ({
      data: presented(await getScheduledEntry(db(), request.organization.id, request.params.id)),
    }),
  );

  app.patch(
    '/scheduled-journal-entries/:id',
    {
      config: { scope: 'entries:write', organization: 'header' },
      // An unknown template is 404 before the body is judged: nothing is told about a body for what is not there.
      preValidation: async (request) => {
        const current = await getScheduledEntry(db(), request.organization.id, (request.params as { id: string }).id);
        judgeScheduleFirst(request.body, current.schedule);
      },
      schema: {
        tags,
        summary: 'Change a scheduled journal entry',
        description:
          'Checked as on creation, except that a startDate left as it is is not held to its bounds again (they move ' +
          'with the calendar). Occurrences already posted never post again; a changed schedule runs from the first ' +
          'occurrence after the last posted one, on or after today.',
        params: ScheduledEntryParams,
        body: UpdateScheduledEntryBody,
        response: { 200: ScheduledEntryOne, ...WRITE_ERRORS },
      },
    },
    async (request) => ({
      data: presented(
        await updateScheduledEntry(
          db(),
          ledgerContext(request),
          request.organization.id,
          request.params.id,
          request.body,
        ),
      ),
    }),
  );

  for (const [action, run, description] of [
    ['pause', pauseScheduledEntry, 'Nothing runs until it is resumed.'],
    [
      'resume',
      resumeScheduledEntry,
      'Occurrences that fell while it was paused are skipped: it runs from the first occurrence on or after today. ' +
        'A failed occurrence waiting for its retry is tried at the next round.',
    ],
  ] as const) {
    app.post(
      `/scheduled-journal-entries/:id/${action}`,
      {
        config: { scope: 'entries:write', organization: 'header' },
        schema: {
          tags,
          summary: `${action === 'pause' ? 'Pause' : 'Resume'} a scheduled journal entry`,
          description: `${description} An ended schedule is 409 INVALID_STATE.`,
          params: ScheduledEntryParams,
          response: { 200: ScheduledEntryOne, ...errorResponses(409) },
        },
      },
      async (request) => ({ data: presented(await run(db(), request.organization.id, request.params.id)) }),
    );
  }

  app.delete(
    '/scheduled-journal-entries/:id',
    {
      config: { scope: 'entries:write', organization: 'header' },
      schema: {
        tags,
        summary: 'Delete a scheduled journal entry',
        description: 'It never runs again; the entries it posted stay in the books.',
        params: ScheduledEntryParams,
        response: { 204: Type.Null({ description: 'Deleted' }) },
      },
    },
    async (request, reply) => {
      await deleteScheduledEntry(db(), request.organization.id, request.params.id);
      return reply.code(204).send(null);
    },
  );
};
