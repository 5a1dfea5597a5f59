"""Five real records, copied from the dataset (repository, path and lines as recorded).

Each snippet is quoted under its repository's licence (Apache-2.0, MIT, BSD-3-Clause); the
explanations the tests expect were checked by hand against these lines.
"""

from __future__ import annotations

RUST_RISINGWAVE = {
    "repo": "risingwavelabs/risingwave",
    "filePath": "src/stream/src/executor/backfill/utils.rs",
    "sourceCodeStart": 62,
    "lineNumber": 80,
    "errorMessage": (
        "Backfill progress for vnode {:#?} not found, backfill_state not initialized properly"
    ),
    "sourceCode": (
        "            )\n"
        "        })\n"
        "    }\n"
        "\n"
        "    pub(crate) fn get_current_state(\n"
        "        &mut self,\n"
        "        vnode: &VirtualNode,\n"
        "    ) -> &mut BackfillProgressPerVnode {\n"
        "        &mut self.inner.get_mut(vnode).unwrap().current_state\n"
        "    }\n"
        "\n"
        "    // Expects the vnode to always have progress, otherwise it will re"
        "turn an error.\n"
        "    pub(crate) fn get_progress(\n"
        "        &self,\n"
        "        vnode: &VirtualNode,\n"
        "    ) -> StreamExecutorResult<&BackfillProgressPerVnode> {\n"
        "        match self.inner.get(vnode) {\n"
        "            Some(p) => Ok(p.current_state()),\n"
        "            None => bail!(\n"
        '                "Backfill progress for vnode {:#?} not found, backfill'
        '_state not initialized properly",\n'
        "                vnode,\n"
        "            ),\n"
        "        }\n"
        "    }\n"
        "\n"
        "    pub(crate) fn update_progress(\n"
        "        &mut self,\n"
        "        vnode: VirtualNode,\n"
        "        new_pos: OwnedRow,\n"
        "        snapshot_row_count_delta: u64,\n"
        "    ) -> StreamExecutorResult<()> {\n"
        "        let state = self.get_current_state(&vnode);\n"
        "        match state {\n"
        "            BackfillProgressPerVnode::NotStarted => {\n"
        "                *state = BackfillProgressPerVnode::InProgress {\n"
        "                    current_pos: new_pos,\n"
        "                    snapshot_row_count: snapshot_row_count_delta,"
    ),
}

JAVA_KAFKA = {
    "repo": "apache/kafka",
    "filePath": (
        "clients/src/main/java/org/apache/kafka/clients/consumer/internals/ShareConsumerImpl.java"
    ),
    "sourceCodeStart": 548,
    "lineNumber": 566,
    "errorMessage": "Consumer is not subscribed to any topics.",
    "sourceCode": (
        "    /**\n"
        "     * {@inheritDoc}\n"
        "     */\n"
        "    @Override\n"
        "    public synchronized ConsumerRecords<K, V> poll(final Duration time"
        "out) {\n"
        "        Timer timer = time.timer(timeout);\n"
        "\n"
        "        acquireAndEnsureOpen();\n"
        "        try {\n"
        "            // Handle any completed acknowledgements for which we alre"
        "ady have the responses\n"
        "            handleCompletedAcknowledgements();\n"
        "\n"
        "            // If using implicit acknowledgement, acknowledge the prev"
        "iously fetched records\n"
        "            acknowledgeBatchIfImplicitAcknowledgement(true);\n"
        "\n"
        "            kafkaShareConsumerMetrics.recordPollStart(timer.currentTim"
        "eMs());\n"
        "\n"
        "            if (subscriptions.hasNoSubscriptionOrUserAssignment()) {\n"
        '                throw new IllegalStateException("Consumer is not subsc'
        'ribed to any topics.");\n'
        "            }\n"
        "\n"
        "            do {\n"
        "                // Make sure the network thread can tell the applicati"
        "on is actively polling\n"
        "                applicationEventHandler.add(new PollEvent(timer.curren"
        "tTimeMs()));\n"
        "\n"
        "                processBackgroundEvents();\n"
        "\n"
        "                // We must not allow wake-ups between polling for fetc"
        "hes and returning the records.\n"
        "                // A wake-up between returned fetches and returning re"
        "cords would lead to never\n"
        "                // returning the records in the fetches. Thus, we trig"
        "ger a possible wake-up before we poll fetches.\n"
        "                wakeupTrigger.maybeTriggerWakeup();\n"
        "\n"
        "                final ShareFetch<K, V> fetch = pollForFetches(timer);\n"
        "                if (!fetch.isEmpty()) {\n"
        "                    currentFetch = fetch;\n"
        "                    return new ConsumerRecords<>(fetch.records(), Map."
        "of());\n"
        "                }"
    ),
}

GO_ETCD = {
    "repo": "etcd-io/etcd",
    "filePath": "client/pkg/transport/keepalive_listener.go",
    "sourceCodeStart": 42,
    "lineNumber": 60,
    "errorMessage": "create keepalive connection failed, %w",
    "sourceCode": (
        '\t\t\treturn nil, errors.New("cannot listen on TLS for given listener: Ke'
        'yFile and CertFile are not presented")\n'
        "\t\t}\n"
        "\t\treturn newTLSKeepaliveListener(kal, tlscfg), nil\n"
        "\t}\n"
        "\n"
        "\treturn kal, nil\n"
        "}\n"
        "\n"
        "type keepaliveListener struct{ net.Listener }\n"
        "\n"
        "func (kln *keepaliveListener) Accept() (net.Conn, error) {\n"
        "\tc, err := kln.Listener.Accept()\n"
        "\tif err != nil {\n"
        "\t\treturn nil, err\n"
        "\t}\n"
        "\n"
        "\tkac, err := createKeepaliveConn(c)\n"
        "\tif err != nil {\n"
        '\t\treturn nil, fmt.Errorf("create keepalive connection failed, %w", err'
        ")\n"
        "\t}\n"
        "\t// detection time: tcp_keepalive_time + tcp_keepalive_probes + tcp_ke"
        "epalive_intvl\n"
        "\t// default on linux:  30 + 8 * 30\n"
        "\t// default on osx:    30 + 8 * 75\n"
        "\tif err := kac.SetKeepAlive(true); err != nil {\n"
        '\t\treturn nil, fmt.Errorf("SetKeepAlive failed, %w", err)\n'
        "\t}\n"
        "\tif err := kac.SetKeepAlivePeriod(30 * time.Second); err != nil {\n"
        '\t\treturn nil, fmt.Errorf("SetKeepAlivePeriod failed, %w", err)\n'
        "\t}\n"
        "\treturn kac, nil\n"
        "}\n"
        "\n"
        "func createKeepaliveConn(c net.Conn) (*keepAliveConn, error) {\n"
        "\ttcpc, ok := c.(*net.TCPConn)\n"
        "\tif !ok {\n"
        "\t\treturn nil, ErrNotTCP\n"
        "\t}"
    ),
}

PY_SQLALCHEMY = {
    "repo": "sqlalchemy/sqlalchemy",
    "filePath": "lib/sqlalchemy/engine/_util_cy.py",
    "sourceCodeStart": 88,
    "lineNumber": 106,
    "errorMessage": "List argument must consist only of tuples or dictionaries",
    "sourceCode": (
        '                "List argument must consist only of dictionaries"\n'
        "            )\n"
        "        return params\n"
        "    elif _is_mapping(params):\n"
        "        return [params]\n"
        "    else:\n"
        '        raise exc.ArgumentError("mapping or list expected for paramete'
        'rs")\n'
        "\n"
        "\n"
        "# _is_mapping_or_tuple could be inlined if pure python perf is a probl"
        "em\n"
        "def _distill_raw_params(\n"
        "    params: Optional[_DBAPIAnyExecuteParams],\n"
        ") -> _DBAPIMultiExecuteParams:\n"
        "    if params is None:\n"
        "        return _Empty_Tuple\n"
        "    elif isinstance(params, list):\n"
        "        # collections_abc.MutableSequence # avoid abc.__instancecheck_"
        "_\n"
        "        if len(params) > 0 and not _is_mapping_or_tuple(params[0]):\n"
        "            raise exc.ArgumentError(\n"
        '                "List argument must consist only of tuples or dictiona'
        'ries"\n'
        "            )\n"
        "        return params\n"
        "    elif _is_mapping_or_tuple(params):\n"
        "        return [params]\n"
        "    else:\n"
        '        raise exc.ArgumentError("mapping or sequence expected for para'
        'meters")\n'
        "\n"
        "\n"
        "@cython.cfunc\n"
        "def _is_contiguous(indexes: Tuple[int, ...]) -> cython.bint:\n"
        "    i: cython.Py_ssize_t\n"
        "    prev: cython.Py_ssize_t\n"
        "    curr: cython.Py_ssize_t\n"
        "    for i in range(1, len(indexes)):\n"
        "        prev = indexes[i - 1]\n"
        "        curr = indexes[i]\n"
        "        if prev != curr - 1:"
    ),
}

PY_DJANGO = {
    "repo": "django/django",
    "filePath": "django/http/response.py",
    "sourceCodeStart": 640,
    "lineNumber": 658,
    "errorMessage": "Unsafe redirect to URL with protocol '%s'",
    "sourceCode": (
        "    def __init__(\n"
        "        self,\n"
        "        redirect_to,\n"
        "        preserve_request=False,\n"
        "        *args,\n"
        "        max_length=MAX_URL_REDIRECT_LENGTH,\n"
        "        **kwargs,\n"
        "    ):\n"
        "        super().__init__(*args, **kwargs)\n"
        '        self["Location"] = iri_to_uri(redirect_to)\n'
        '        if max_length is not None and len(self["Location"]) > max_leng'
        "th:\n"
        "            raise DisallowedRedirect(\n"
        '                f"Unsafe redirect exceeding {max_length} characters"\n'
        "            )\n"
        "        parsed = urlsplit(str(redirect_to))\n"
        "        if preserve_request:\n"
        "            self.status_code = self.status_code_preserve_request\n"
        "        if parsed.scheme and parsed.scheme not in self.allowed_schemes"
        ":\n"
        "            raise DisallowedRedirect(\n"
        "                \"Unsafe redirect to URL with protocol '%s'\" % parsed.s"
        "cheme\n"
        "            )\n"
        "\n"
        '    url = property(lambda self: self["Location"])\n'
        "\n"
        "    def __repr__(self):\n"
        "        return (\n"
        "            '<%(cls)s status_code=%(status_code)d%(content_type)s, url"
        '="%(url)s">\'\n'
        "            % {\n"
        '                "cls": self.__class__.__name__,\n'
        '                "status_code": self.status_code,\n'
        '                "content_type": self._content_type_for_repr,\n'
        '                "url": self.url,\n'
        "            }\n"
        "        )\n"
        "\n"
        "\n"
        "class HttpResponseRedirect(HttpResponseRedirectBase):"
    ),
}
