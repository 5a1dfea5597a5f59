"""Real-shaped logs for the tests that need a long one: a Kafka client's Java stack traces
(long package paths, long identifiers) and a CI build log around them, of any size.

The known errors are messages of records in ``fixtures/demo-records.jsonl`` (Kafka's
``TopicMetadataFetcher`` and ``NetworkClientUtils``), so a test that loads the demo data
has something to find, and the rest is the build noise a real CI log is made of.
"""

# The lines are as long as the real ones are: that length is what the tests need.
# ruff: noqa: E501

from __future__ import annotations

KAFKA_TRACE = """\
[2026-11-30 03:12:44,117] INFO [Consumer clientId=consumer-orders-enrichment-service-group-7, groupId=orders-enrichment-service-group] Subscribed to topic(s): com.example.platform.orders.enrichment.v2.OrderEnrichmentRequestedEventTopic (org.apache.kafka.clients.consumer.internals.LegacyKafkaConsumer)
[2026-11-30 03:13:44,120] ERROR [Consumer clientId=consumer-orders-enrichment-service-group-7, groupId=orders-enrichment-service-group] Unexpected error in fetcher loop (org.apache.kafka.clients.consumer.internals.AbstractFetch)
org.apache.kafka.common.errors.TimeoutException: Timeout expired while fetching topic metadata
\tat org.apache.kafka.clients.consumer.internals.TopicMetadataFetcher.getTopicMetadata(TopicMetadataFetcher.java:117)
\tat org.apache.kafka.clients.consumer.internals.LegacyKafkaConsumer.partitionsFor(LegacyKafkaConsumer.java:1012)
\tat com.example.platform.orders.enrichment.infrastructure.messaging.kafka.consumer.OrderEnrichmentRequestedEventConsumerConfigurationAutoConfiguration$$SpringCGLIB$$0.partitionsForEnrichmentRequestedTopicWithRetryAndBackoff(<generated>)
\tat org.springframework.kafka.listener.KafkaMessageListenerContainer$ListenerConsumer.pollAndInvoke(KafkaMessageListenerContainer.java:1543)
\tat java.base/java.util.concurrent.ThreadPoolExecutor$Worker.run(ThreadPoolExecutor.java:642)
[2026-11-30 03:13:45,002] WARN [AdminClient clientId=adminclient-1] Connection to node -1 (kafka-broker-0.kafka-broker-headless.streaming-platform-production.svc.cluster.local/10.42.17.201:9092) could not be established. (org.apache.kafka.clients.NetworkClient)
java.io.IOException: Client was shutdown before response was read
\tat org.apache.kafka.clients.NetworkClientUtils.sendAndReceive(NetworkClientUtils.java:106)
\tat org.apache.kafka.clients.admin.internals.AdminMetadataManager$AdminMetadataUpdateRequestHandlerWithExtraordinarilyLongName.handleCompletedMetadataResponse(AdminMetadataManager.java:220)
"""

BUILD_NOISE = """\
> Task :streams:integration-tests:compileTestJava UP-TO-DATE /home/runner/work/platform/platform/services/orders-enrichment/build/classes/java/main/com/example/platform/orders/enrichment/
2026-11-30T03:12:44.118Z [main] DEBUG o.s.b.a.l.ConditionEvaluationReportLogger - OrderEnrichmentRequestedEventConsumerConfigurationAutoConfiguration matched: @ConditionalOnClass found required class 'org.apache.kafka.clients.consumer.KafkaConsumer'
Downloading https://repo.maven.apache.org/maven2/org/apache/kafka/kafka-clients/3.9.0/kafka-clients-3.9.0.jar (7.1 MB) ... done
"""


def ci_log(size: int) -> str:
    """A CI log of about ``size`` characters: build noise, with the Kafka trace near the
    start, in the middle and at the end (a long log's errors are anywhere in it)."""
    noise = BUILD_NOISE * max(1, -(-(size - 3 * len(KAFKA_TRACE)) // (2 * len(BUILD_NOISE))))
    return f"{KAFKA_TRACE}{noise}{KAFKA_TRACE}{noise}{KAFKA_TRACE}"
