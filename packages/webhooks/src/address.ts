import { lookup } from 'node:dns/promises';
import { DomainError } from '@firm/core';
import ipaddr from 'ipaddr.js';

/** A resolved address of a host, as `dns.lookup` gives it. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to its addresses. Passed in so tests can play DNS (including rebinding). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((a) => ({
    address: a.address,
    family: a.family === 6 ? 6 : 4,
  }));

export interface UrlPolicy {
  /** Allow plain http, and loopback addresses, for local development and tests. */
  allowInsecureLocalhost: boolean;
  resolve?: Resolver | undefined;
}

/** A URL that passed the checks, with the address the connection must go to. */
export interface CheckedTarget {
  url: URL;
  /** The checked address; the connection is pinned to it so a second DNS answer cannot redirect it. */
  address: ResolvedAddress;
}

const refused = (reason: string) =>
  new DomainError('WEBHOOK_URL_REFUSED', `the webhook URL is refused: ${reason}`, [{ field: 'url', message: reason }]);

/** The host exactly as written, before the URL parser normalises `2130706433` or `0177.0.0.1` to 127.0.0.1. */
function writtenHost(raw: string): string {
  const match = /^[a-z][a-z0-9+.-]*:\/\/(?:[^@/?#\\]*@)?(\[[^\]]*\]|[^:/?#\\]*)/i.exec(raw.trim());
  return (match?.[1] ?? '').toLowerCase();
}

const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');

/**
 * Why an address may not receive webhooks, or null when it may. Only globally routable unicast
 * addresses pass: ipaddr.js names every other range (private, loopback, link-local including
 * 169.254.169.254, carrier-grade NAT, multicast, unique-local, reserved, 6to4 and NAT64 prefixes
 * that can embed a private IPv4 address...). IPv4-mapped IPv6 addresses are judged as IPv4.
 */
export function addressRefusal(address: string, policy: UrlPolicy): string | null {
  if (!ipaddr.isValid(address)) return `${address} is not an IP address`;
  const parsed = ipaddr.process(address);
  const range = parsed.range();
  // ipaddr.js calls the deprecated IPv4-compatible block ::/96 unicast; it is not globally routable,
  // and its addresses embed an IPv4 address ([::127.0.0.1] is ::7f00:1).
  if (range === 'unicast' && parsed instanceof ipaddr.IPv6 && parsed.match(IPV4_COMPATIBLE)) {
    return `${parsed.toString()} is an ipv4Compatible address`;
  }
  if (range === 'unicast') return null;
  if (range === 'loopback' && policy.allowInsecureLocalhost) return null;
  return `${parsed.toString()} is a ${range} address`;
}

/**
 * Checks a webhook URL and resolves its host: https only (http only to loopback when insecure
 * localhost is allowed), no credentials, IP literals only in their canonical form, and every
 * address the host resolves to must be allowed. Runs when a subscription is saved and again before
 * every delivery, whose connection then goes to the returned address.
 */
export async function checkWebhookUrl(raw: string, policy: UrlPolicy): Promise<CheckedTarget> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refused('not an absolute URL');
  }
  const insecure = url.protocol === 'http:';
  if (url.protocol !== 'https:' && !(insecure && policy.allowInsecureLocalhost)) {
    throw refused('the scheme must be https');
  }
  if (url.username || url.password) throw refused('credentials in the URL are not allowed');
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (!host) throw refused('the URL has no host');
  if (ipaddr.IPv4.isValidFourPartDecimal(host) && writtenHost(raw) !== host) {
    throw refused('IP addresses must be written in dotted-decimal form (no decimal, octal or hex literals)');
  }
  let addresses: ResolvedAddress[];
  if (ipaddr.isValid(host)) {
    addresses = [{ address: host, family: host.includes(':') ? 6 : 4 }];
  } else {
    try {
      addresses = await (policy.resolve ?? systemResolver)(host);
    } catch {
      addresses = [];
    }
    if (addresses.length === 0) throw refused(`${host} does not resolve`);
  }
  for (const a of addresses) {
    const reason = addressRefusal(a.address, policy);
    if (reason) throw refused(reason);
  }
  if (insecure && !addresses.every((a) => ipaddr.process(a.address).range() === 'loopback')) {
    throw refused('plain http is allowed only to loopback addresses');
  }
  return { url, address: addresses[0] as ResolvedAddress };
}
