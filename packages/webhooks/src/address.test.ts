import { DomainError } from '@firm/core';
import { describe, expect, it } from 'vitest';
import { addressRefusal, checkWebhookUrl, type Resolver, type UrlPolicy } from './address';

const dns =
  (answers: Record<string, string[]>): Resolver =>
  async (host) =>
    (answers[host] ?? []).map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

const strict: UrlPolicy = { allowInsecureLocalhost: false, resolve: dns({ 'hooks.example.com': ['93.184.215.14'] }) };
const local: UrlPolicy = { ...strict, allowInsecureLocalhost: true };

async function refusal(url: string, policy: UrlPolicy = strict): Promise<string> {
  try {
    await checkWebhookUrl(url, policy);
  } catch (err) {
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe('WEBHOOK_URL_REFUSED');
    return (err as DomainError).details?.[0]?.message ?? '';
  }
  throw new Error(`${url} was accepted`);
}

describe('webhook URL checks', () => {
  it('accepts an https URL whose host resolves to public addresses, and pins the checked address', async () => {
    const target = await checkWebhookUrl('https://hooks.example.com/in?x=1', strict);
    expect(target.url.toString()).toBe('https://hooks.example.com/in?x=1');
    expect(target.address).toEqual({ address: '93.184.215.14', family: 4 });
    expect((await checkWebhookUrl('https://[2606:4700::1111]/', strict)).address.family).toBe(6);
  });

  it('refuses what is not https, and plain http to anything but loopback even when allowed', async () => {
    expect(await refusal('http://hooks.example.com/in')).toMatch(/https/);
    expect(await refusal('ftp://hooks.example.com/in', local)).toMatch(/https/);
    expect(await refusal('not a url')).toMatch(/absolute URL/);
    expect(await refusal('http://hooks.example.com/in', local)).toMatch(/only to loopback/);
    await expect(checkWebhookUrl('http://127.0.0.1:8080/in', local)).resolves.toBeTruthy();
    await expect(checkWebhookUrl('http://[::1]:8080/in', local)).resolves.toBeTruthy();
  });

  it('refuses credentials in the URL', async () => {
    expect(await refusal('https://user:pass@hooks.example.com/in')).toMatch(/credentials/);
    expect(await refusal('https://user@hooks.example.com/in')).toMatch(/credentials/);
  });

  it('refuses loopback, private, link-local, metadata, CGNAT and multicast addresses, literal or resolved', async () => {
    for (const url of [
      'https://127.0.0.1/',
      'https://10.1.2.3/',
      'https://172.16.0.1/',
      'https://192.168.1.1/',
      'https://169.254.169.254/latest/meta-data/',
      'https://100.100.100.200/',
      'https://224.0.0.1/',
      'https://0.0.0.0/',
      'https://[::1]/',
      'https://[::ffff:127.0.0.1]/',
      'https://[::ffff:a9fe:a9fe]/',
      'https://[fd00:ec2::254]/',
      'https://[fe80::1]/',
      'https://[64:ff9b::a00:1]/',
    ]) {
      expect(await refusal(url), url).toMatch(/address/);
    }
    const resolving = dns({
      'internal.example.com': ['10.0.0.5'],
      'mixed.example.com': ['93.184.215.14', '192.168.0.10'],
      'meta.example.com': ['169.254.169.254'],
    });
    expect(await refusal('https://internal.example.com/', { ...strict, resolve: resolving })).toMatch(/private/);
    expect(await refusal('https://mixed.example.com/', { ...strict, resolve: resolving })).toMatch(/private/);
    expect(await refusal('https://meta.example.com/', { ...local, resolve: resolving })).toMatch(/linkLocal/);
  });

  it('refuses loopback unless insecure localhost is allowed, and private ranges even then', async () => {
    expect(await refusal('https://127.0.0.1/')).toMatch(/loopback/);
    await expect(checkWebhookUrl('https://127.0.0.1/', local)).resolves.toBeTruthy();
    expect(await refusal('https://10.0.0.1/', local)).toMatch(/private/);
    expect(addressRefusal('::ffff:127.0.0.1', strict)).toMatch(/127\.0\.0\.1 is a loopback/);
  });

  it('refuses decimal, octal and hex IP literals, which the URL parser would turn into addresses', async () => {
    for (const url of [
      'https://2130706433/',
      'https://0177.0.0.1/',
      'https://0x7f.0.0.1/',
      'https://1572395042/',
      'https://0x5db8d70e/',
      'https://127.1/',
    ]) {
      expect(await refusal(url, local), url).toMatch(/dotted-decimal/);
    }
  });

  it('refuses a host that does not resolve', async () => {
    expect(await refusal('https://nowhere.example.com/')).toMatch(/does not resolve/);
    const failing: Resolver = async () => {
      throw new Error('ENOTFOUND');
    };
    expect(await refusal('https://nowhere.example.com/', { ...strict, resolve: failing })).toMatch(/does not resolve/);
  });
});
