import { connect } from 'node:net'
import { buildApp } from '/work/main/src/app.ts'
import { loadConfig } from '/work/main/src/config.ts'
const app = await buildApp({ ...loadConfig({}), DATABASE_URL: 'sqlite::memory:', API_KEYS: ['k'], LOG_LEVEL: 'silent' })
await app.listen({ port: 0, host: '127.0.0.1' })
app.server.on('connection', (s) => { const d = s.destroy.bind(s); s.destroy = (e?: any) => { console.log('destroy at read', s.bytesRead, new Error().stack!.split('\n').slice(2,6).join(' | ')); return d(e) } })
const port = (app.server.address() as any).port
const s = connect(port, '127.0.0.1'); let a = ''; let sent = 0
s.on('data', (d) => a += d); s.on('error', (e) => console.log('client err', e.message))
await new Promise((r) => s.on('connect', r))
s.write(`POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${1024 ** 3}\r\n\r\n`)
const block = Buffer.alloc(1024 * 1024, ' ')
while (!s.destroyed && sent < 64 * block.length) { sent += block.length; if (!s.write(block)) await new Promise((r) => s.once('drain', r).once('close', r)) }
console.log('sent MiB', sent / 1048576, a.slice(0, 30))
await app.close()
