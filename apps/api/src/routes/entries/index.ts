import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  createDraftEntry,
  getEntry,
  listEntries,
  listJournalLines,
  postEntry,
  presentEntry,
  voidEntry,
} from '@firm/ledger';
import type { Static } from 'typebox';
import { errorResponses } from '../../errors/responses';
import { DEFAULT_LIMIT } from '../../schemas';
import { ledgerContext } from '../context';
import {
  CompanyParams,
  CreateDraftBody,
  EntryList,
  EntryListQuery,
  EntryOne,
  EntryParams,
  LineList,
  LineListQuery,
  VoidBody,
} from './schemas';

const tags = ['entries'];

export const entryRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.database.db;

  const list = async (organizationId: string, query: Static<typeof EntryListQuery>) => {
    const page = await listEntries(db(), organizationId, { ...query, limit: query.limit ?? DEFAULT_LIMIT });
    return { data: page.data.map(presentEntry), nextCursor: page.nextCursor };
  };

  app.get(
    '/entries',
    {
      config: { scope: 'entries:read', organization: 'header' },
      schema: {
        tags,
        summary: 'List entries',
        description: 'Drafts, posted and void entries in date order, with their lines.',
        querystring: EntryListQuery,
        response: { 200: EntryList },
      },
    },
    async (request) => list(request.organization.id, request.query),
  );

  app.get(
    '/companies/:companyId/journal-entries',
    {
      config: { scope: 'entries:read', organization: 'path' },
      schema: {
        tags,
        summary: 'Journal entries of a company',
        params: CompanyParams,
        querystring: EntryListQuery,
        response: { 200: EntryList },
      },
    },
    async (request) => list(request.organization.id, request.query),
  );

  app.get(
    '/companies/:companyId/journal-lines',
    {
      config: { scope: 'entries:read', organization: 'path' },
      schema: {
        tags,
        summary: 'Journal lines of a company',
        description: 'Lines of posted entries in (date, entry, line) order: the detail every balance sums.',
        params: CompanyParams,
        querystring: LineListQuery,
        response: { 200: LineList },
      },
    },
    async (request) => {
      const { limit, ...rest } = request.query;
      return listJournalLines(db(), request.organization.id, { ...rest, limit: limit ?? DEFAULT_LIMIT });
    },
  );

  app.post(
    '/entries',
    {
      config: { scope: 'entries:write', organization: 'header' },
      schema: {
        tags,
        summary: 'Create a draft entry',
        description:
          'A draft needs at least two lines on active accounts of the organization, each with exactly one of ' +
          'debitCents and creditCents. It need not balance until it is posted, and moves no balance until then.',
        body: CreateDraftBody,
        response: { 201: EntryOne, ...errorResponses(415, 422) },
      },
    },
    async (request, reply) => {
      const entry = await db().transaction((tx) =>
        createDraftEntry(tx, ledgerContext(request), request.organization.id, request.body),
      );
      return reply.code(201).send({ data: presentEntry(entry) });
    },
  );

  app.get(
    '/entries/:id',
    {
      config: { scope: 'entries:read', organization: 'header' },
      schema: { tags, summary: 'Entry with lines', params: EntryParams, response: { 200: EntryOne } },
    },
    async (request) => ({ data: presentEntry(await getEntry(db(), request.organization.id, request.params.id)) }),
  );

  app.post(
    '/entries/:id/post',
    {
      config: { scope: 'entries:write', organization: 'header' },
      schema: {
        tags,
        summary: 'Post a draft entry',
        description:
          'draft -> posted. The lines must balance (422 UNBALANCED_ENTRY) and the date must be after the ' +
          'books-closed date (422 PERIOD_CLOSED). Anything but a draft is 409 INVALID_STATE.',
        params: EntryParams,
        response: { 200: EntryOne, ...errorResponses(409, 422) },
      },
    },
    async (request) => {
      const entry = await db().transaction((tx) =>
        postEntry(tx, ledgerContext(request), request.organization.id, request.params.id),
      );
      return { data: presentEntry(entry) };
    },
  );

  app.post(
    '/entries/:id/void',
    {
      config: { scope: 'entries:write', organization: 'header' },
      schema: {
        tags,
        summary: 'Void a posted entry',
        description:
          'posted -> void. The entry stays visible with voidedAt and the reason; its amounts leave every ' +
          'balance and report. Anything but a posted entry is 409 INVALID_STATE, and so is the entry of a sales or ' +
          'purchase document (invoice, bill, payment...): void the document instead. An entry dated on or before the ' +
          'books-closed date is 422 PERIOD_CLOSED.',
        params: EntryParams,
        body: VoidBody,
        response: { 200: EntryOne, ...errorResponses(409, 415, 422) },
      },
    },
    async (request) => {
      const entry = await db().transaction((tx) =>
        voidEntry(tx, ledgerContext(request), request.organization.id, request.params.id, request.body.reason),
      );
      return { data: presentEntry(entry) };
    },
  );
};
