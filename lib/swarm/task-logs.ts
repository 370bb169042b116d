// The logs of a service's or a task's containers (`docker service logs`, `docker service logs <task>`): each line with
// its timestamp when asked and dockerd's details prefix (node, service and task IDs) when asked. Follow streams every
// task at once until the client leaves.
import type { TaskRecord } from './model.js'
import type { TaskContainers, TaskLogOptions } from './task-containers.js'

export type LogOptions = TaskLogOptions & { details: boolean }

/** The tasks whose containers have logs, by slot then age. */
export function loggedTasks (tasks: TaskRecord[]): TaskRecord[] {
  return tasks.filter((t) => t.status.containerStatus?.containerId !== undefined).sort((a, b) => (a.slot ?? 0) - (b.slot ?? 0) || a.createdMs - b.createdMs)
}

/** Whether these tasks' logs are raw (TTY) rather than multiplexed. */
export function logsTty (tasks: TaskRecord[]): boolean {
  return tasks.some((t) => t.spec.containerSpec.tty)
}

export async function writeTaskLogs (containers: TaskContainers, tasks: TaskRecord[], o: LogOptions, write: (stream: 1 | 2, data: Buffer) => void): Promise<void> {
  const one = async (t: TaskRecord): Promise<void> => {
    const cid = t.status.containerStatus?.containerId as string
    if (containers.inspect(cid) === undefined) return
    const details = `com.docker.swarm.node.id=${t.nodeId},com.docker.swarm.service.id=${t.serviceId},com.docker.swarm.task.id=${t.id}`
    await containers.logs(cid, { ...o, timestamps: true }, (stream, line) => {
      // the reader's line starts with its timestamp and a space
      const sp = line.indexOf(32)
      const ts = line.subarray(0, sp + 1)
      const rest = line.subarray(sp + 1)
      const parts: Buffer[] = []
      if (o.timestamps) parts.push(ts)
      if (o.details) parts.push(Buffer.from(details + ' '))
      parts.push(rest)
      write(stream, Buffer.concat(parts))
    })
  }
  if (o.follow) await Promise.all(tasks.map(one))
  else for (const t of tasks) await one(t)
}
