import { z } from "zod"

// Seed 004's deploy-status example, reporting its live state with ctx.metadata({ title,
// metadata }) while it works, and answering with the call's identity.
export default {
  id: "deploy-watch",

  server(_input, { config }) {
    const endpoint = config?.endpoint
    if (!endpoint) throw new Error("deploy-watch: set plugin_config.deploy-watch.endpoint")

    return {
      tool: () => [
        {
          id: "deploy_watch",
          description: "Check a service's deployment, showing each step while it works.",
          parameters: z.object({
            service: z.string().describe("Service name, e.g. 'api' or 'web'."),
          }),
          idempotent: true,
          async execute({ service }, ctx) {
            ctx.metadata({ title: `${service} — checking`, metadata: { endpoint } })
            const res = await fetch(`${endpoint}/status/${service}`, {
              signal: ctx.abort,
            })
            if (!res.ok) throw new Error(`status ${res.status} for ${service}`)
            const body = await res.json()
            ctx.metadata({ title: `${service} — ${body.health}`, metadata: { release: body.release } })

            return {
              title: `${service} — ${body.health}`,
              metadata: { release: body.release },
              output: JSON.stringify({
                sessionID: ctx.sessionID ?? null,
                messageID: ctx.messageID ?? null,
                callID: ctx.callID ?? null,
                agent: ctx.agent ?? null,
              }),
            }
          },
        },
      ],
    }
  },
}
