import { z } from "zod"

export default {
  id: "deploy-status",

  server(_input, { config }) {
    const endpoint = config?.endpoint
    if (!endpoint) throw new Error("deploy-status: set plugin_config.deploy-status.endpoint")

    return {
      tool: () => [
        {
          id: "deploy_status",
          description:
            "Check the current deployment status of a service. Returns the live " +
            "release tag, health, and the time of the last deploy.",
          parameters: z.object({
            service: z.string().describe("Service name, e.g. 'api' or 'web'."),
          }),
          idempotent: true,
          async execute({ service }, ctx) {
            const res = await fetch(`${endpoint}/status/${service}`, {
              signal: ctx.abort,
            })
            if (!res.ok) throw new Error(`status ${res.status} for ${service}`)
            const body = await res.json()

            return {
              title: `${service} — ${body.health}`,
              metadata: { release: body.release },
              output: `Service ${service} is ${body.health} on release ${body.release}, deployed ${body.deployedAt}.`,
            }
          },
        },
      ],
    }
  },
}
