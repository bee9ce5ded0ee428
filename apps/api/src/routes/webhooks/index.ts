import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { EVENT_TYPE_LIST, EVENT_TYPES, TEST_EVENT_TYPE } from '@firm/core';
import {
  createSubscription,
  type Delivery,
  deleteSubscription,
  type DeliveryAttempt,
  getDelivery,
  getSubscription,
  listDeliveries,
  listSubscriptions,
  redeliver,
  rotateSecret,
  sendTestEvent,
  type Subscription,
  updateSubscription,
  type WebhookDeps,
  type WebhookOwner,
} from '@firm/webhooks';
import type { FastifyRequest } from 'fastify';
import { type Static, Type } from 'typebox';
import { errorResponses } from '../../errors/responses';
import { DEFAULT_LIMIT } from '../../schemas';
import {
  CreateWebhookBody,
  DeliveryDetailOne,
  DeliveryList,
  DeliveryListQuery,
  DeliveryOne,
  DeliveryParams,
  EventTypeList,
  type EventTypeName,
  type SubscribedEventType,
  SubscriptionList,
  SubscriptionOne,
  SubscriptionWithSecretOne,
  UpdateWebhookBody,
  WebhookListQuery,
  WebhookParams,
} from './schemas';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

// Stored types were checked against the catalogue when written.
export const presentSubscription = (s: Subscription) => ({
  ...s,
  eventTypes: s.eventTypes as Static<typeof SubscribedEventType>[],
  disabledAt: iso(s.disabledAt),
  previousSecretExpiresAt: iso(s.previousSecretExpiresAt),
  createdAt: s.createdAt.toISOString(),
  updatedAt: s.updatedAt.toISOString(),
});

export const presentDelivery = (d: Delivery) => ({
  ...d,
  eventType: d.eventType as Static<typeof EventTypeName>,
  nextAttemptAt: iso(d.nextAttemptAt),
  lastAttemptedAt: iso(d.lastAttemptedAt),
  completedAt: iso(d.completedAt),
  createdAt: d.createdAt.toISOString(),
});

const presentAttempt = (a: DeliveryAttempt) => ({
  ...a,
  attemptedAt: a.attemptedAt.toISOString(),
  outcome: a.outcome as 'succeeded' | 'retrying' | 'failed' | 'gone',
});

const ownerOf = (request: FastifyRequest): WebhookOwner => ({
  firmId: request.credential.firmId,
  organizationIds: request.credential.organizationIds,
});

const DELIVERY_DOCS = [
  'Each event is POSTed as JSON `{id, type, createdAt, organizationId, sequence, data}`, where `data` is the',
  'resource as the API returns it and `sequence` increases by one per event sent to the subscription.',
  'Requests are signed per the Standard Webhooks specification (`webhook-id`, `webhook-timestamp`,',
  '`webhook-signature` with v1 HMAC-SHA256 of `id.timestamp.body`). A 2xx answer within the timeout is',
  'success; anything else is retried with exponential backoff over about three days.',
].join(' ');

const tags = ['webhooks'];

export const webhookRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.database.db;
  const deps = (): WebhookDeps => ({
    policy: { allowInsecureLocalhost: app.config.WEBHOOKS_ALLOW_INSECURE_LOCALHOST },
    secretKeys: app.webhookSecretKeys,
  });

  app.get(
    '/webhooks/event-types',
    {
      config: { scope: 'webhooks:read', organization: 'none' },
      schema: {
        tags,
        summary: 'The webhook event catalogue',
        description: DELIVERY_DOCS,
        response: { 200: EventTypeList },
      },
    },
    async () => ({
      data: EVENT_TYPE_LIST.map((type) => ({
        type,
        description: EVENT_TYPES[type],
        subscribable: type !== TEST_EVENT_TYPE,
      })),
    }),
  );

  app.get(
    '/webhooks',
    {
      config: { scope: 'webhooks:read', organization: 'none' },
      schema: {
        tags,
        summary: 'List webhook subscriptions',
        querystring: WebhookListQuery,
        response: { 200: SubscriptionList },
      },
    },
    async (request) => {
      const page = await listSubscriptions(db(), ownerOf(request), {
        limit: request.query.limit ?? DEFAULT_LIMIT,
        cursor: request.query.cursor,
      });
      return { data: page.data.map(presentSubscription), nextCursor: page.nextCursor };
    },
  );

  app.post(
    '/webhooks',
    {
      config: { scope: 'webhooks:write', organization: 'none' },
      schema: {
        tags,
        summary: 'Subscribe a URL to events',
        description: `The response carries the signing secret, shown only this once. ${DELIVERY_DOCS} A URL that is not https, carries credentials, or resolves to a private, loopback, link-local, carrier-grade NAT, multicast or cloud-metadata address is refused with 422 WEBHOOK_URL_REFUSED.`,
        body: CreateWebhookBody,
        response: { 201: SubscriptionWithSecretOne, ...errorResponses(415, 422) },
      },
    },
    async (request, reply) => {
      const { subscription, secret } = await createSubscription(db(), ownerOf(request), request.body, deps());
      return reply.code(201).send({ data: { ...presentSubscription(subscription), secret } });
    },
  );

  app.get(
    '/webhooks/:id',
    {
      config: { scope: 'webhooks:read', organization: 'none' },
      schema: { tags, summary: 'A webhook subscription', params: WebhookParams, response: { 200: SubscriptionOne } },
    },
    async (request) => ({
      data: presentSubscription(await getSubscription(db(), ownerOf(request), request.params.id)),
    }),
  );

  app.patch(
    '/webhooks/:id',
    {
      config: { scope: 'webhooks:write', organization: 'none' },
      schema: {
        tags,
        summary: 'Change a webhook subscription',
        description: 'A new URL is checked as at creation. `enabled: true` re-enables a disabled subscription.',
        params: WebhookParams,
        body: UpdateWebhookBody,
        response: { 200: SubscriptionOne, ...errorResponses(415, 422) },
      },
    },
    async (request) => ({
      data: presentSubscription(
        await updateSubscription(db(), ownerOf(request), request.params.id, request.body, deps()),
      ),
    }),
  );

  app.delete(
    '/webhooks/:id',
    {
      config: { scope: 'webhooks:write', organization: 'none' },
      schema: {
        tags,
        summary: 'Delete a webhook subscription and its delivery log',
        params: WebhookParams,
        response: { 204: Type.Null({ description: 'Deleted.' }) },
      },
    },
    async (request, reply) => {
      await deleteSubscription(db(), ownerOf(request), request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/webhooks/:id/rotate-secret',
    {
      config: { scope: 'webhooks:write', organization: 'none' },
      schema: {
        tags,
        summary: 'Rotate the signing secret',
        description:
          'Returns the new secret, shown only this once. For 24 hours the old secret keeps signing alongside it: each request carries both signatures.',
        params: WebhookParams,
        response: { 200: SubscriptionWithSecretOne },
      },
    },
    async (request) => {
      const { subscription, secret } = await rotateSecret(db(), ownerOf(request), request.params.id, deps());
      return { data: { ...presentSubscription(subscription), secret } };
    },
  );

  app.post(
    '/webhooks/:id/test',
    {
      config: { scope: 'webhooks:write', organization: 'none' },
      schema: {
        tags,
        summary: 'Send a test event',
        description: 'Queues a webhook.test event for this subscription only; follow it in the delivery log.',
        params: WebhookParams,
        response: { 202: DeliveryOne, ...errorResponses(409) },
      },
    },
    async (request, reply) => {
      const delivery = await sendTestEvent(db(), ownerOf(request), request.params.id, {});
      return reply.code(202).send({ data: presentDelivery(delivery) });
    },
  );

  app.get(
    '/webhooks/:id/deliveries',
    {
      config: { scope: 'webhooks:read', organization: 'none' },
      schema: {
        tags,
        summary: 'The delivery log of a subscription, newest first',
        description: '`since` and `until` bound when the delivery was queued.',
        params: WebhookParams,
        querystring: DeliveryListQuery,
        response: { 200: DeliveryList },
      },
    },
    async (request) => {
      const { limit, cursor, status, eventType, since, until } = request.query;
      const page = await listDeliveries(db(), ownerOf(request), request.params.id, {
        limit: limit ?? DEFAULT_LIMIT,
        cursor,
        status,
        eventType,
        since: since ? new Date(since) : undefined,
        until: until ? new Date(until) : undefined,
      });
      return { data: page.data.map(presentDelivery), nextCursor: page.nextCursor };
    },
  );

  app.get(
    '/webhooks/:id/deliveries/:deliveryId',
    {
      config: { scope: 'webhooks:read', organization: 'none' },
      schema: {
        tags,
        summary: 'A delivery with every attempt',
        params: DeliveryParams,
        response: { 200: DeliveryDetailOne },
      },
    },
    async (request) => {
      const { id, deliveryId } = request.params;
      const delivery = await getDelivery(db(), ownerOf(request), id, deliveryId);
      return { data: { ...presentDelivery(delivery), attempts: delivery.attempts.map(presentAttempt) } };
    },
  );

  app.post(
    '/webhooks/:id/deliveries/:deliveryId/redeliver',
    {
      config: { scope: 'webhooks:write', organization: 'none' },
      schema: {
        tags,
        summary: 'Deliver an event again',
        description:
          'Queues a succeeded or failed delivery again, due now, with the same event id and sequence number and a fresh retry schedule.',
        params: DeliveryParams,
        response: { 202: DeliveryOne, ...errorResponses(409) },
      },
    },
    async (request, reply) => {
      const delivery = await redeliver(db(), ownerOf(request), request.params.id, request.params.deliveryId, {});
      return reply.code(202).send({ data: presentDelivery(delivery) });
    },
  );
};
