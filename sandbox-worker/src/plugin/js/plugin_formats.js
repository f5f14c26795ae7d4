// The seed systems' tool formats, each read as its authors wrote it and turned into
// codemode's tool registrations. `plugin.js` loads the layout's modules (Rust found them,
// `plugin-format` crate) and hands their namespaces to the format's adapter here with a
// toolkit: `register(spec)` adds one tool, `note(text)` reports something the format
// asks for that codemode does not honour, `refuse(text)` stops the load, and
// `unoffered(name)` is what a member codemode cannot offer throws when it is touched.
//
// | format | module | tool fields mapped |
// |---|---|---|
// | manifest (000) | `activate(api)` / `runPlugin` | through `api.tools.register` (plugin.js) |
// | zhin (001) | `tools/<name>/index.ts` (and `skills/<s>/tools/...`, `agents/<a>/tools/...`) default `defineAgentTool({...})`, or a module default-exporting `definePlugin({ name, setup(context) })` (Path Two) | description, inputSchema, requiresApproval, hidden, execute(input, context); the owner of a private tool; `context.addTool(name, def)`, `context.config.get()` |
// | plico (002) | `tools/*.tool.ts` default `defineTool({...})` | name, description, inputSchema, capabilities, approval, handler(input, ctx) |
// | globals (003) | `globalThis.tools.<name>` | description, parameters, handler(input) (plugin.js collects them) |
// | podcode (004) | default `{ id, server(input, { config }) }` | id, description, parameters, execute(args, ctx), idempotent, truncation, ctx.recordChange |
//
// A module of the bundle step (`build.rs`), before `plugin.js`; imports nothing and
// exports one object, `formats`.
const formats = (function () {
  const {
    ArrayIsArray,
    ArrayPrototypeIncludes,
    ArrayPrototypeJoin,
    ArrayPrototypePush,
    Error: ErrorCtor,
    ObjectDefineProperty,
    ObjectFreeze,
    ObjectKeys,
    ReflectApply,
    SafeSet,
    SetPrototypeAdd,
    SetPrototypeHas,
    String: StringCtor,
    StringPrototypeCharCodeAt,
    StringPrototypeIndexOf,
    StringPrototypeSlice,
    StringPrototypeStartsWith,
    StringPrototypeTrim,
    TypeError: TypeErrorCtor,
  } = primordials;

  /** An object whose `names` each throw `codemode does not offer <prefix>.<name>` when read. */
  function withUnoffered(target, prefix, names, unoffered) {
    for (let i = 0; i < names.length; i++) {
      const name = names[i];
      ObjectDefineProperty(target, name, { get: () => unoffered(`${prefix}.${name}`), enumerable: false });
    }
    return target;
  }

  /** An object whose `entries` (`[name, why]`) each throw `<prefix>.<name> is not available in codemode: <why>` when read. */
  function withNotApplicable(target, prefix, entries, notApplicable) {
    for (let i = 0; i < entries.length; i++) {
      const name = entries[i][0];
      const why = entries[i][1];
      ObjectDefineProperty(target, name, { get: () => notApplicable(`${prefix}.${name}`, why), enumerable: false });
    }
    return target;
  }

  function isObject(value) {
    return value !== null && typeof value === "object";
  }

  function requireText(value, where) {
    if (typeof value !== "string" || StringPrototypeTrim(value) === "") {
      throw new TypeErrorCtor(`${where} is required: say what the tool does and when to use it`);
    }
    return value;
  }

  // ------------------------------------------------------------ zhin (001)
  /** Context members of zhin's capability context that codemode has nothing behind. */
  const ZHIN_UNOFFERED = ["use", "generation", "origin", "principal", "policy", "question", "$client"];
  const ZHIN_APPROVALS = ["never", "on-risk", "once", "always"];
  const ZHIN_RESTRICTIONS = ["platforms", "scopes", "permissions"];

  function zhin(entries, kit) {
    for (let i = 0; i < entries.length; i++) {
      const { module, tool: name, namespace, owner } = entries[i];
      if (name === undefined) {
        // No tool folder: a module default-exporting definePlugin (Path Two).
        return zhinPlugin(entries[i], kit);
      }
      const spec = zhinSpec(name, namespace.default, `${module}`, kit, "defineAgentTool({ description, inputSchema, execute })");
      // A tool private to a skill or an agent carries its owner's folder (declared once
      // a session loads that skill or selects that agent).
      if (spec !== null) kit.register(owner === undefined ? spec : { ...spec, owner });
    }
  }

  /**
   * One zhin tool definition as a registration, or null when it is left out (with a
   * note); a definition codemode cannot load stops the load (`kit.refuse`).
   */
  function zhinSpec(name, def, where, kit, expected) {
    if (!isObject(def)) kit.refuse(`${where} must be ${expected}`);
    if (typeof def.execute !== "function") kit.refuse(`${where}: \`execute\` must be a function (input, context) => result`);
    requireText(def.description, `${where}: \`description\``);
    const approval = def.requiresApproval === undefined ? "on-risk" : def.requiresApproval;
    if (!ArrayPrototypeIncludes(ZHIN_APPROVALS, approval)) {
      kit.refuse(`${where}: \`requiresApproval\` must be one of ${ArrayPrototypeJoin(ZHIN_APPROVALS, ", ")}`);
    }
    // Access restrictions codemode cannot check: the tool would reach everyone, so it
    // is left out (fail closed), by name.
    let restricted = false;
    for (let r = 0; r < ZHIN_RESTRICTIONS.length; r++) {
      const field = ZHIN_RESTRICTIONS[r];
      if (ArrayIsArray(def[field]) && def[field].length > 0) {
        kit.note(`tool ${name} (${where}) is not offered: \`${field}\` restricts who may call it, and codemode has no ${field === "permissions" ? "permits" : field} to check; remove \`${field}\` to offer it to every agent`);
        restricted = true;
      }
    }
    if (restricted) return null;
    const execute = def.execute;
    return {
      name,
      where,
      description: def.description,
      input: def.inputSchema,
      inputWhere: `tool ${name}: inputSchema`,
      annotations: def.annotations,
      approval: approval === "on-risk" ? onRiskApproval(def.annotations) : approval,
      hidden: def.hidden === true,
      run: (input, call) => {
        // zhin.js reads `context.config` as values and as `config.get()`.
        const values = kit.settingsObject();
        const config = ObjectFreeze({ ...values, get: () => values });
        const context = withUnoffered({ config, owner: kit.plugin, signal: call.signal }, "context", ZHIN_UNOFFERED, kit.unoffered);
        return ReflectApply(execute, def, [input, ObjectFreeze(context)]);
      },
    };
  }

  /**
   * zhin's default, `on-risk`: "keeps unknown plugin actions behind confirmation". A
   * plugin tool is known to be harmless only when it says it reads and changes nothing
   * (`annotations.readOnlyHint`, and not `destructiveHint`); every other one asks.
   */
  function onRiskApproval(annotations) {
    const readOnly = isObject(annotations) && annotations.readOnlyHint === true && annotations.destructiveHint !== true;
    return readOnly ? "never" : "always";
  }

  /**
   * zhin's Path Two: `definePlugin({ name, setup(context) })`. `setup` adds tools with
   * `context.addTool(name, defineAgentTool(...))` and reads the plugin's configuration
   * with `context.config.get()`. What it adds is kept aside and registered only after
   * `setup` returned and every definition was read, all at once; a `setup` that throws
   * (or a definition that cannot load) registers nothing and says why.
   */
  async function zhinPlugin(entry, kit) {
    const { module, namespace } = entry;
    const plugin = namespace.default;
    if (!isObject(plugin) || typeof plugin.setup !== "function") {
      kit.refuse(`${module} must default-export definePlugin({ name, setup(context) }) (zhin.js Path Two), or be laid out as tools/<name>/index.ts`);
    }
    const added = [];
    let open = true;
    const values = kit.settingsObject();
    const context = withUnoffered(
      {
        name: typeof plugin.name === "string" ? plugin.name : kit.plugin,
        config: ObjectFreeze({ get: () => values }),
        addTool: (name, def) => {
          if (!open) {
            throw new ErrorCtor(`context.addTool(${StringCtor(name)}) was called after setup() returned; zhin.js publishes a plugin's tools once, when setup() succeeds, so add them inside setup()`);
          }
          if (typeof name !== "string") throw new TypeErrorCtor("context.addTool takes (name, defineAgentTool({ ... })): the name must be a string");
          ArrayPrototypePush(added, { name, def });
        },
      },
      "context",
      ZHIN_UNOFFERED,
      kit.unoffered,
    );
    try {
      await ReflectApply(plugin.setup, plugin, [ObjectFreeze(context)]);
    } catch (e) {
      open = false;
      const why = isObject(e) && typeof e.message === "string" ? e.message : StringCtor(e);
      kit.refuse(`${module}: setup() threw, so none of the tools it added are offered: ${why}`);
    }
    open = false;
    if (added.length === 0) {
      kit.refuse(`${module}: setup() added no tools (it did not call context.addTool), so the plugin offers none`);
    }
    const specs = [];
    for (let i = 0; i < added.length; i++) {
      const { name, def } = added[i];
      const spec = zhinSpec(name, def, `${module}: context.addTool('${name}')`, kit, "defineAgentTool({ description, inputSchema, execute })");
      if (spec !== null) ArrayPrototypePush(specs, spec);
    }
    for (let i = 0; i < specs.length; i++) kit.register(specs[i]);
  }

  // ----------------------------------------------------------- plico (002)
  const PLICO_RESERVED = ["list_files", "read_file", "write_file", "edit_file", "load_skill"];

  function plico(entries, kit) {
    const seen = new SafeSet();
    for (let i = 0; i < entries.length; i++) {
      const { module, namespace } = entries[i];
      const def = namespace.default;
      if (!isObject(def)) {
        kit.refuse(`${module} must default-export defineTool({ name, description, inputSchema, capabilities, approval, handler })`);
        continue;
      }
      const where = `${module}`;
      if (typeof def.name !== "string") {
        kit.refuse(`${where}: \`name\` must be a string`);
        continue;
      }
      if (ArrayPrototypeIncludes(PLICO_RESERVED, def.name)) {
        kit.refuse(`${where}: the name ${def.name} is reserved (${ArrayPrototypeJoin(PLICO_RESERVED, ", ")}); choose another`);
        continue;
      }
      if (SetPrototypeHas(seen, def.name)) {
        kit.refuse(`${where}: another .tool file already declares a tool named ${def.name}; names are unique across the project`);
        continue;
      }
      SetPrototypeAdd(seen, def.name);
      if (typeof def.handler !== "function") {
        kit.refuse(`${where}: \`handler\` must be a function (input, ctx) => result`);
        continue;
      }
      if (!ArrayIsArray(def.capabilities)) {
        kit.refuse(`${where}: \`capabilities\` is required, a list of labels for what the tool touches (for example ["ticket:write"], or [])`);
        continue;
      }
      if (!isObject(def.approval) || typeof def.approval.required !== "boolean") {
        kit.refuse(`${where}: \`approval\` is required: { required: false }, or { required: true, reason: "..." }`);
        continue;
      }
      requireText(def.description, `${where}: \`description\``);
      const handler = def.handler;
      kit.register({
        name: def.name,
        where,
        description: def.description,
        input: def.inputSchema,
        inputWhere: `tool ${def.name}: inputSchema`,
        approval: def.approval.required ? "always" : "never",
        approvalReason: typeof def.approval.reason === "string" ? def.approval.reason : undefined,
        meta: { capabilities: def.capabilities },
        run: (input, call) => {
          const ctx = withUnoffered(
            { context: call.hostContext, signal: call.signal, idempotencyKey: call.idempotencyKey, artifacts: plicoArtifacts(call, kit) },
            "ctx",
            [],
            kit.unoffered,
          );
          return ReflectApply(handler, def, [input, ObjectFreeze(ctx)]);
        },
      });
    }
  }

  /**
   * plico's `ctx.artifacts`: `write(path, content, { mimeType })` (content a string or a
   * Uint8Array) resolves with `{ path, uri, mimeType, size }`, `read(path)` with the
   * content as written (a string, or a Uint8Array), `list()` with every artifact of the
   * session. The host keeps them for the MCP session; the agent receives each one
   * written during its program as a resource.
   */
  function plicoArtifacts(call, kit) {
    const send = (params) => call.service("host/artifacts", params);
    return ObjectFreeze({
      write: async (path, content, options) => {
        if (typeof path !== "string") throw new TypeErrorCtor("ctx.artifacts.write takes (path, content, { mimeType }?)");
        const mimeType = isObject(options) && typeof options.mimeType === "string" ? options.mimeType : undefined;
        let params;
        if (typeof content === "string") params = { op: "write", path, text: content, mimeType };
        else if (kit.isBytes(content)) params = { op: "write", path, base64: kit.bytesToBase64(content), mimeType };
        else throw new TypeErrorCtor("ctx.artifacts.write: content must be a string or a Uint8Array");
        return ObjectFreeze((await send(params)).artifact);
      },
      read: async (path) => {
        if (typeof path !== "string") throw new TypeErrorCtor("ctx.artifacts.read takes a path");
        const answer = await send({ op: "read", path });
        return answer.text !== undefined ? answer.text : kit.base64ToBytes(answer.base64);
      },
      list: async () => (await send({ op: "list" })).artifacts,
    });
  }

  // --------------------------------------------------------- podcode (004)
  /** Podcode's ToolContext members with nothing behind them here. */
  const PODCODE_UNOFFERED = [];
  /** Which end of an oversized output a Podcode tool keeps (`truncation`), the first the default. */
  const PODCODE_TRUNCATIONS = ["head", "tail"];
  /**
   * An output larger than this many bytes (UTF-8) is oversized: the cap Podcode's
   * built-in tools share ("same truncation"), 50 KiB. The document names no number of
   * its own; this is the one its built-ins apply.
   */
  const PODCODE_OUTPUT_BYTES = 50 * 1024;
  /** The result `_meta` key that carries a call's change journal to the host (`core/src/outcome.rs`). */
  const CHANGES_META = "codemode/changes";
  /** Why `ctx.messages` cannot exist here. */
  const PODCODE_NO_MESSAGES = "ctx.messages is not available in codemode: an MCP server is never sent the agent's conversation (MCP carries no chat history to the tools it calls), so there are no messages to read; pass what the tool needs in its arguments";

  async function podcode(entries, kit) {
    const { module, namespace } = entries[0];
    const plugin = namespace.default;
    if (!isObject(plugin) || typeof plugin.server !== "function") {
      kit.refuse(`${module} must default-export { id, server(input, { config }) } whose hooks include \`tool\``);
      return;
    }
    const hooks = await plugin.server(ObjectFreeze({}), ObjectFreeze({ config: kit.settingsObject() }));
    if (!isObject(hooks) || hooks.tool === undefined) {
      kit.refuse(`${module}: server() returned no \`tool\` hook, so the plugin offers no tools`);
      return;
    }
    const defs = typeof hooks.tool === "function" ? await hooks.tool() : hooks.tool;
    if (!ArrayIsArray(defs)) {
      kit.refuse(`${module}: the \`tool\` hook must return a list of tool definitions`);
      return;
    }
    for (let i = 0; i < defs.length; i++) {
      const def = defs[i];
      const where = `${module}: tool ${isObject(def) ? def.id : i}`;
      if (!isObject(def) || typeof def.id !== "string") {
        kit.refuse(`${where}: each tool needs an \`id\``);
        continue;
      }
      if (typeof def.execute !== "function") {
        kit.refuse(`${where}: \`execute\` must be a function (args, ctx) => result`);
        continue;
      }
      requireText(def.description, `${where}: \`description\``);
      if (def.parameters === undefined) {
        kit.refuse(`${where}: \`parameters\` is required, a zod schema`);
        continue;
      }
      const truncation = def.truncation === undefined ? PODCODE_TRUNCATIONS[0] : def.truncation;
      if (!ArrayPrototypeIncludes(PODCODE_TRUNCATIONS, truncation)) {
        kit.refuse(`${where}: \`truncation\` must be "head" or "tail" (which end of an oversized output survives)`);
        continue;
      }
      const execute = def.execute;
      kit.register({
        name: def.id,
        where,
        description: def.description,
        input: def.parameters,
        inputWhere: `tool ${def.id}: parameters`,
        annotations: def.idempotent === true ? { readOnlyHint: true, idempotentHint: true } : undefined,
        run: async (args, call) => {
          const changes = [];
          const ctx = withUnoffered(
            {
              sessionID: call.base.chatId ?? call.base.sessionId,
              messageID: call.base.messageId,
              callID: call.base.callId,
              parentID: undefined,
              rootID: undefined,
              agent: call.base.agentId,
              mainCwd: call.base.workspace,
              abort: call.signal,
              metadata: (update) => podcodeMetadata(call, update),
              recordChange: (change) => recordChange(changes, change, def.id, kit),
              ask: async (request) => {
                const permission = isObject(request) ? StringCtor(request.permission) : "this";
                const patterns = isObject(request) && ArrayIsArray(request.patterns) ? request.patterns : [];
                const message = `Allow tool ${def.id} the "${permission}" permission${patterns.length ? ` for ${ArrayPrototypeJoin(patterns, ", ")}` : ""}?`;
                const answer = await call.ask(message, { permission, patterns, metadata: isObject(request) ? request.metadata : undefined });
                if (!answer.approved) {
                  throw new ErrorCtor(`the person did not allow ${permission}${answer.reason ? `: ${answer.reason}` : ""}`);
                }
              },
            },
            "ctx",
            PODCODE_UNOFFERED,
            kit.unoffered,
          );
          ObjectDefineProperty(ctx, "messages", { get: () => { throw new ErrorCtor(PODCODE_NO_MESSAGES); }, enumerable: false });
          let returned;
          try {
            returned = await ReflectApply(execute, def, [args, ObjectFreeze(ctx)]);
          } catch (e) {
            // What it changed before it threw is still changed: the journal says so.
            if (changes.length === 0) throw e;
            kit.failWithMeta(e, { [CHANGES_META]: changes });
          }
          return withChanges(podcodeResult(returned, truncation), changes);
        },
      });
    }
  }

  /**
   * Podcode's `ctx.metadata({ title, metadata })`: the tool's live state, as a progress
   * line of the call (its title, with the metadata as details).
   */
  function podcodeMetadata(call, update) {
    if (!isObject(update)) throw new TypeErrorCtor("ctx.metadata takes { title?, metadata? }");
    const title = update.title === undefined ? "metadata" : StringCtor(update.title);
    call.report(title, update.metadata);
  }

  /**
   * `ctx.recordChange({ file, op, oldContent, newContent })`: one entry of the call's
   * change journal, a plain copy. It never throws: in Podcode's own pattern it runs after
   * the file was written, so a throw would fail a call that did its work; an entry that
   * cannot be read is logged and left out.
   */
  function recordChange(changes, change, tool, kit) {
    try {
      const text = (value) => (value === null || value === undefined ? null : StringCtor(value));
      ArrayPrototypePush(changes, {
        file: StringCtor(change.file),
        op: StringCtor(change.op === undefined ? "modify" : change.op),
        oldContent: text(change.oldContent),
        newContent: text(change.newContent),
      });
    } catch (e) {
      kit.console.error(`tool ${tool}: ctx.recordChange could not read its change, which is left out of the journal: ${isObject(e) && typeof e.message === "string" ? e.message : StringCtor(e)}`);
    }
  }

  /** `result` carrying the call's change journal under `_meta` (the host collects it). */
  function withChanges(result, changes) {
    if (changes.length === 0) return result;
    if (typeof result === "string") result = { content: [{ type: "text", text: result }] };
    if (!isObject(result) || ArrayIsArray(result)) return result;
    const meta = isObject(result._meta) ? { ...result._meta } : {};
    meta[CHANGES_META] = changes;
    return { ...result, _meta: meta };
  }

  /** The UTF-8 length of the UTF-16 code unit at `i` of `text` (a surrogate pair counts 4 for its high half, 0 for its low half). */
  function utf8Width(text, i) {
    const c = StringPrototypeCharCodeAt(text, i);
    if (c < 0x80) return 1;
    if (c < 0x800) return 2;
    if (c >= 0xd800 && c <= 0xdbff) return 4;
    if (c >= 0xdc00 && c <= 0xdfff) return 0;
    return 3;
  }

  /**
   * `output` within [`PODCODE_OUTPUT_BYTES`], keeping its start (`head`) or its end
   * (`tail`), with a marker at the cut saying how many bytes were left out. An output
   * that fits is returned as it is.
   */
  function truncateOutput(output, truncation) {
    let total = 0;
    for (let i = 0; i < output.length; i++) total += utf8Width(output, i);
    if (total <= PODCODE_OUTPUT_BYTES) return output;
    let kept = 0;
    if (truncation === "tail") {
      let start = output.length;
      // Whole characters from the end: a low surrogate goes with the high one before it.
      while (start > 0) {
        let from = start - 1;
        if (utf8Width(output, from) === 0 && from > 0) from -= 1;
        let width = 0;
        for (let i = from; i < start; i++) width += utf8Width(output, i) || 0;
        if (kept + width > PODCODE_OUTPUT_BYTES) break;
        kept += width;
        start = from;
      }
      return `[output cut: the first ${total - kept} of ${total} bytes were left out; this tool keeps the end of an oversized output (truncation "tail")]\n${StringPrototypeSlice(output, start)}`;
    }
    let end = 0;
    while (end < output.length) {
      const width = utf8Width(output, end);
      if (kept + width > PODCODE_OUTPUT_BYTES) break;
      kept += width;
      end += width === 4 ? 2 : 1;
    }
    return `${StringPrototypeSlice(output, 0, end)}\n[output cut: the last ${total - kept} of ${total} bytes were left out; this tool keeps the start of an oversized output (truncation "head")]`;
  }

  /**
   * A Podcode result as an MCP result: `output` is what the model reads (cut to the
   * tool's `truncation` when oversized); attachments are content.
   */
  function podcodeResult(result, truncation) {
    if (typeof result === "string") return truncateOutput(result, truncation);
    if (!isObject(result) || ArrayIsArray(result) || result.content !== undefined) return result;
    const output = typeof result.output === "string" ? result.output : StringCtor(result.output ?? "");
    const content = [{ type: "text", text: truncateOutput(output, truncation) }];
    const attachments = ArrayIsArray(result.attachments) ? result.attachments : [];
    for (let i = 0; i < attachments.length; i++) {
      const a = attachments[i];
      if (!isObject(a) || typeof a.url !== "string") continue;
      const comma = StringPrototypeIndexOf(a.url, ",");
      if (StringPrototypeStartsWith(a.url, "data:") && comma > 0 && StringPrototypeIndexOf(StringPrototypeSlice(a.url, 0, comma), ";base64") > 0) {
        const mimeType = typeof a.mime === "string" ? a.mime : StringPrototypeSlice(a.url, 5, StringPrototypeIndexOf(a.url, ";"));
        const kind = StringPrototypeStartsWith(mimeType, "image/") ? "image" : StringPrototypeStartsWith(mimeType, "audio/") ? "audio" : null;
        const data = StringPrototypeSlice(a.url, comma + 1);
        ArrayPrototypePush(content, kind ? { type: kind, data, mimeType } : { type: "resource", resource: { uri: "attachment:" + i, mimeType, blob: data } });
      } else {
        ArrayPrototypePush(content, { type: "resource_link", uri: a.url, name: a.url, mimeType: typeof a.mime === "string" ? a.mime : undefined });
      }
    }
    const meta = result.title !== undefined || result.metadata !== undefined ? { podcode: { title: result.title, metadata: result.metadata } } : undefined;
    return { content, _meta: meta };
  }

  // --------------------------------------------------------- globals (003)
  /** The members of seed 003's `host` that codemode has nothing behind. */
  const HOST_UNOFFERED = ["agents", "models"];

  /** Seed 003's `host.session` members besides `llm`: each needs the agent's chat, which an MCP server never has. */
  const SESSION_NOT_APPLICABLE = [
    ["conversation", "an MCP server is given a tool call's arguments, never the agent's conversation, so there is none to read; pass what the tool needs as its input"],
    ["post", "an MCP server cannot write into the agent's chat; return the text from the tool, and the agent reads it"],
    ["posts", "an MCP server cannot read or write the agent's chat; return the text from the tool, and the agent reads it"],
    ["todos", "MCP gives a server no access to the agent's todo list; return what is left to do in the tool's result"],
    ["timers", "an MCP server cannot wake the agent later: a tool call ends when it answers, and MCP has no way to start a turn in the chat afterwards"],
    ["peers", "an MCP server knows no other agents or chats of the client and cannot message them"],
  ];

  /** Seed 003's `host.media` (upload and transcode audio): the app's media service. */
  const MEDIA_WHY = "uploading and transcoding audio is a service of the agent's app, which an MCP server does not have; return audio as MCP content ({ content: [{ type: \"audio\", data, mimeType }] }) instead";

  /** A path given as a string or as `{ path }`. */
  function pathOf(request, member) {
    if (typeof request === "string") return request;
    if (isObject(request) && typeof request.path === "string") return request.path;
    throw new TypeErrorCtor(`${member} takes { path }`);
  }

  /**
   * Seed 003's `host.workspace`: `read({ path })` resolves with the file's text,
   * `write({ path, content })` with `{ path, bytes }`, `list({ path }?)` with
   * `[{ name, kind }]`. The host does the file work beneath the session's workspace.
   */
  function makeWorkspace(kit) {
    return ObjectFreeze({
      read: async (request) => (await kit.workspace("read", { path: pathOf(request, "host.workspace.read") })).content,
      write: async (request) => {
        if (!isObject(request) || typeof request.path !== "string" || typeof request.content !== "string") {
          throw new TypeErrorCtor("host.workspace.write takes { path, content }, both strings");
        }
        const answer = await kit.workspace("write", { path: request.path, content: request.content });
        return { path: request.path, bytes: answer.bytes };
      },
      list: async (request) => (await kit.workspace("list", { path: request === undefined ? "" : pathOf(request, "host.workspace.list") })).entries,
    });
  }

  /** Seed 003's `host` global (defined before the script runs). */
  function makeHost(kit) {
    const host = {
      fetch: async (request) => {
        if (!isObject(request) || typeof request.url !== "string") throw new TypeErrorCtor("host.fetch takes { url, method?, headers?, body? }");
        const response = await kit.fetch(request.url, { method: request.method, headers: request.headers, body: request.body, signal: request.signal });
        const headers = {};
        response.headers.forEach((value, name) => { headers[name] = value; });
        return { status: response.status, headers, body: await response.text() };
      },
      log: (...args) => kit.console.log(...args),
      crypto: kit.crypto,
      workspace: makeWorkspace(kit),
    };
    ObjectDefineProperty(host, "settings", { get: () => kit.settingsObject(), enumerable: true });
    host.llm = (request) => kit.askModel("host.llm", request);
    host.decide = (question, options) => kit.decide(question, options);
    host.session = ObjectFreeze(withNotApplicable({ llm: (request) => kit.askModel("host.session.llm", request) }, "host.session", SESSION_NOT_APPLICABLE, kit.notApplicable));
    ObjectDefineProperty(host, "media", { get: () => kit.notApplicable("host.media", MEDIA_WHY), enumerable: false });
    return ObjectFreeze(withUnoffered(host, "host", HOST_UNOFFERED, kit.unoffered));
  }

  return { zhin, plico, podcode, makeHost, withUnoffered, withNotApplicable, requireText, isObject, keysOf: ObjectKeys };
})();

export { formats };
