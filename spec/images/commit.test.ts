// Commit (a container's changes become a layer; the new image runs), history, system/df, images/prune, search.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { startEngine, request, importBusybox, createContainer, containerSkipReason, dockerCli, hasDockerCli } from '../helpers/engine.js'
import { demuxAll } from '../../lib/stream/stdcopy.js'

const skip = containerSkipReason()

test('commit', { skip: skip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  const baseId = await importBusybox(socket)

  async function runOut (image: string, cmd?: string[]): Promise<{ code: number, out: string, err: string }> {
    const id = await createContainer(socket, { Image: image, ...(cmd !== undefined ? { Cmd: cmd } : {}) })
    await request(socket, 'POST', `/containers/${id}/start`)
    const code = ((await request(socket, 'POST', `/containers/${id}/wait`)).json() as { StatusCode: number }).StatusCode
    const logs = demuxAll((await request(socket, 'GET', `/containers/${id}/logs?stdout=1&stderr=1`)).body)
    await request(socket, 'DELETE', `/containers/${id}`)
    return { code, out: logs.stdout.toString(), err: logs.stderr.toString() }
  }

  await t.test('added, changed and deleted files land in a new layer; changes and config apply; 201 {Id}', async () => {
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['sh', '-c', 'echo committed > /hello; rm /bin/vi; echo x >> /etc/passwd'] })
    await request(socket, 'POST', `/containers/${id}/start`)
    await request(socket, 'POST', `/containers/${id}/wait`)
    const changes = (await request(socket, 'GET', `/containers/${id}/changes`)).json() as Array<{ Path: string, Kind: number }>
    assert.ok(changes.some((c) => c.Path === '/hello' && c.Kind === 1))
    assert.ok(changes.some((c) => c.Path === '/bin/vi' && c.Kind === 2))
    const q = new URLSearchParams({ container: id.slice(0, 10), repo: 'docker.io/library/mine', tag: 'v1', comment: 'a comment', author: 'me' })
    q.append('changes', 'CMD ["cat","/hello"]')
    q.append('changes', 'ENV FOO=bar')
    q.append('changes', 'LABEL a=b')
    q.append('changes', 'WORKDIR /tmp')
    const r = await request(socket, 'POST', `/commit?${q.toString()}`)
    assert.equal(r.status, 201)
    // a stopped container's root filesystem is not left mounted by the commit
    assert.ok(!readFileSync('/proc/mounts', 'utf8').includes(id), 'still mounted after the commit')
    const newId = (r.json() as { Id: string }).Id
    assert.match(newId, /^sha256:[0-9a-f]{64}$/)
    const insp = (await request(socket, 'GET', '/images/mine:v1/json')).json() as Record<string, any>
    assert.equal(insp.Id, newId)
    assert.equal(insp.Parent, baseId)
    assert.equal(insp.Comment, 'a comment')
    assert.equal(insp.Author, 'me')
    assert.deepEqual(insp.Config.Cmd, ['cat', '/hello'])
    assert.deepEqual(insp.Config.Labels, { a: 'b' })
    assert.equal(insp.Config.WorkingDir, '/tmp')
    assert.equal(insp.RootFS.Layers.length, 2)
    const list = (await request(socket, 'GET', '/images/json')).json() as Array<{ Id: string, ParentId: string, RepoTags: string[] }>
    assert.equal(list.find((i) => i.Id === newId)?.ParentId, baseId)
    assert.deepEqual(list.find((i) => i.Id === newId)?.RepoTags, ['mine:v1'])
    assert.equal((await runOut('mine:v1')).out, 'committed\n')
    const check = await runOut('mine:v1', ['sh', '-c', 'ls /bin/vi; echo $FOO; pwd; tail -1 /etc/passwd'])
    assert.match(check.err, /No such file or directory/)
    assert.equal(check.out, 'bar\n/tmp\nx\n')
    const hist = (await request(socket, 'GET', '/images/mine:v1/history')).json() as Array<{ Id: string, CreatedBy: string, Comment: string }>
    assert.equal(hist[0]?.Id, newId)
    assert.equal(hist[0]?.Comment, 'a comment')
    assert.equal(hist.length, 2)
  })

  await t.test('a config body overrides; pause=0 on a running container; untagged without repo', async () => {
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['sh', '-c', 'echo live > /live; sleep 30'] })
    await request(socket, 'POST', `/containers/${id}/start`)
    for (let i = 0; i < 50; i++) {
      const ch = (await request(socket, 'GET', `/containers/${id}/changes`)).json() as Array<{ Path: string }> | null
      if (ch?.some((c) => c.Path === '/live') === true) break
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    const r = await request(socket, 'POST', `/commit?container=${id}&pause=0`, { body: { Cmd: ['cat', '/live'], Env: ['X=1'] } })
    assert.equal(r.status, 201)
    const newId = (r.json() as { Id: string }).Id
    const insp = (await request(socket, 'GET', `/images/${newId}/json`)).json() as Record<string, any>
    assert.deepEqual(insp.RepoTags, [])
    assert.deepEqual(insp.Config.Cmd, ['cat', '/live'])
    assert.equal((await runOut(newId.slice(7, 19))).out, 'live\n')
    assert.equal(((await request(socket, 'GET', `/containers/${id}/json`)).json() as Record<string, any>).State.Status, 'running')
    await request(socket, 'DELETE', `/containers/${id}?force=1`)
  })

  await t.test('bad commits are clear errors', async () => {
    assert.equal((await request(socket, 'POST', '/commit?container=nope')).status, 404)
    assert.equal((await request(socket, 'POST', '/commit')).status, 400)
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['true'] })
    assert.equal((await request(socket, 'POST', `/commit?container=${id}&repo=BAD`)).status, 400)
    assert.equal((await request(socket, 'POST', `/commit?container=${id}&changes=${encodeURIComponent('FROM x')}`)).status, 400)
    // the config body is a container.Config: a value of the wrong kind is dockerd's decoder error, nothing committed
    for (const [body, text] of [
      [{ Labels: { a: { b: 1 } } }, 'json: cannot unmarshal object into Go struct field Config.Labels of type string'],
      [{ Env: 'A=1' }, 'json: cannot unmarshal string into Go struct field Config.Env of type []string'],
      [{ ExposedPorts: { '80/tcp': 1 } }, 'json: cannot unmarshal number into Go struct field Config.ExposedPorts of type struct {}']
    ] as const) {
      const r = await request(socket, 'POST', `/commit?container=${id}&repo=notmade`, { body })
      assert.equal(r.status, 400, r.text)
      assert.equal((r.json() as { message: string }).message, text)
    }
    assert.equal((await request(socket, 'GET', '/images/notmade/json')).status, 404)
    await request(socket, 'DELETE', `/containers/${id}`)
  })

  await t.test('docker commit and run through the CLI', { skip: hasDockerCli() ? false : 'no docker CLI' }, async () => {
    const run = await dockerCli(socket, ['run', '--name', 'clic', 'busybox', 'sh', '-c', 'echo via-cli > /f'])
    assert.equal(run.status, 0, run.stderr)
    const c = await dockerCli(socket, ['commit', '-c', 'CMD ["cat","/f"]', 'clic', 'clicommit'])
    assert.equal(c.status, 0, c.stderr)
    assert.match(c.stdout, /^sha256:[0-9a-f]{64}\n$/)
    assert.equal((await dockerCli(socket, ['run', '--rm', 'clicommit'])).stdout, 'via-cli\n')
    await dockerCli(socket, ['rm', 'clic'])
  })

  await t.test('system/df, images/prune, search offline', async () => {
    const df = (await request(socket, 'GET', '/system/df')).json() as Record<string, any>
    assert.equal(typeof df.LayersSize, 'number')
    assert.ok(Array.isArray(df.Images) && df.Images.length >= 2)
    assert.ok(Array.isArray(df.Containers))
    assert.deepEqual(df.BuildCache, [])
    assert.equal((await request(socket, 'GET', '/system/df?type=nope')).status, 400)
    const only = (await request(socket, 'GET', '/system/df?type=volume')).json() as Record<string, unknown>
    assert.deepEqual(Object.keys(only), ['Volumes'])
    const prune = (await request(socket, 'POST', '/images/prune')).json() as { ImagesDeleted: Array<Record<string, string>> | null, SpaceReclaimed: number }
    assert.ok(prune.ImagesDeleted?.some((d) => d.Deleted !== undefined), JSON.stringify(prune))
    const after = (await request(socket, 'GET', '/images/json')).json() as Array<{ RepoTags: string[] }>
    assert.ok(after.every((i) => i.RepoTags.length > 0))
    const search = await request(socket, 'GET', '/images/search?term=busybox')
    assert.ok(search.status === 200 || search.status === 503, String(search.status))
    if (search.status === 503) assert.match((search.json() as { message: string }).message, /index\.docker\.io/)
  })
})
