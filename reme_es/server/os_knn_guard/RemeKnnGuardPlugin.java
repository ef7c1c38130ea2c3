/*
 * A guard for the managed OpenSearch node: its k-NN plugin comes from Maven Central without native libraries, so a
 * knn_vector field on the faiss or nmslib engine (or on the default engine, which is one of them) kills the JVM with
 * UnsatisfiedLinkError when its first segment is written, and again on every restart while the translog replays.
 * This action filter refuses such mappings (create index, put mapping, index/component templates) with a 400 that
 * names the engine that works. An index created before the guard (or restored from elsewhere) fails its shards
 * instead of starting them, so the node stays up with that one index red. Built and installed by
 * reme_es.server.knn_guard.
 */
package reme.es.knnguard;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

import org.opensearch.action.ActionRequest;
import org.opensearch.action.admin.indices.create.CreateIndexRequest;
import org.opensearch.action.admin.indices.mapping.put.PutMappingRequest;
import org.opensearch.action.admin.indices.template.put.PutComponentTemplateAction;
import org.opensearch.action.admin.indices.template.put.PutComposableIndexTemplateAction;
import org.opensearch.action.admin.indices.template.put.PutIndexTemplateRequest;
import org.opensearch.action.support.ActionFilter;
import org.opensearch.action.support.ActionFilterChain;
import org.opensearch.client.Client;
import org.opensearch.cluster.metadata.IndexMetadata;
import org.opensearch.cluster.metadata.IndexNameExpressionResolver;
import org.opensearch.cluster.metadata.Template;
import org.opensearch.cluster.service.ClusterService;
import org.opensearch.common.settings.Settings;
import org.opensearch.common.xcontent.XContentHelper;
import org.opensearch.common.xcontent.json.JsonXContent;
import org.opensearch.core.action.ActionListener;
import org.opensearch.core.action.ActionResponse;
import org.opensearch.core.common.io.stream.NamedWriteableRegistry;
import org.opensearch.core.xcontent.NamedXContentRegistry;
import org.opensearch.env.Environment;
import org.opensearch.env.NodeEnvironment;
import org.opensearch.index.IndexModule;
import org.opensearch.index.IndexService;
import org.opensearch.index.mapper.DocumentMapper;
import org.opensearch.index.shard.IndexEventListener;
import org.opensearch.core.index.shard.ShardId;
import org.opensearch.plugins.ActionPlugin;
import org.opensearch.plugins.Plugin;
import org.opensearch.repositories.RepositoriesService;
import org.opensearch.script.ScriptService;
import org.opensearch.tasks.Task;
import org.opensearch.threadpool.ThreadPool;
import org.opensearch.watcher.ResourceWatcherService;

public class RemeKnnGuardPlugin extends Plugin implements ActionPlugin {

    private volatile ClusterService clusterService;

    @Override
    public java.util.Collection<Object> createComponents(Client client, ClusterService clusterService, ThreadPool threadPool,
            ResourceWatcherService resourceWatcherService, ScriptService scriptService, NamedXContentRegistry xContentRegistry,
            Environment environment, NodeEnvironment nodeEnvironment, NamedWriteableRegistry namedWriteableRegistry,
            IndexNameExpressionResolver indexNameExpressionResolver,
            java.util.function.Supplier<RepositoriesService> repositoriesServiceSupplier) {
        this.clusterService = clusterService;
        return Collections.emptyList();
    }

    @Override
    public List<ActionFilter> getActionFilters() {
        return List.of(new Guard());
    }

    @Override
    public void onIndexModule(IndexModule module) {
        if (module.getSettings().getAsBoolean("index.knn", false)) {
            module.addIndexEventListener(new ShardGuard());
        }
    }

    /** Fails the shards of a k-NN index whose mapping names an engine this node cannot run (before they replay). */
    private static final class ShardGuard implements IndexEventListener {
        private volatile IndexService service;

        @Override
        public void afterIndexCreated(IndexService indexService) {
            service = indexService;
        }

        @Override
        public void beforeIndexShardCreated(ShardId shardId, Settings indexSettings) {
            IndexService s = service;
            DocumentMapper mapper = s == null ? null : s.mapperService().documentMapper();
            if (mapper == null) {
                return;
            }
            List<String> found = problems(mapper.mappingSource().string());
            if (!found.isEmpty()) {
                throw new IllegalStateException("index [" + shardId.getIndexName() + "] not started: " + message(found)
                    + ". Delete the index (DELETE /" + shardId.getIndexName() + ") or move it to a full distribution");
            }
        }
    }

    /** Whether every index named exists and is not a k-NN index (`index.knn` false); false if any is unknown. */
    private boolean allFlat(String[] indices) {
        ClusterService cs = clusterService;
        if (cs == null || indices == null || indices.length == 0) {
            return false;
        }
        for (String name : indices) {
            IndexMetadata meta = cs.state().metadata().index(name);
            if (meta == null || meta.getSettings().getAsBoolean("index.knn", false)) {
                return false;
            }
        }
        return true;
    }

    private static boolean knnOff(Settings settings) {
        return settings != null && "false".equals(settings.get("index.knn"));
    }

    /** What is wrong with the knn_vector fields of a mapping (JSON), or an empty list. */
    static List<String> problems(String mappingJson) {
        List<String> out = new ArrayList<>();
        if (mappingJson == null || mappingJson.isBlank()) {
            return out;
        }
        walk(XContentHelper.convertToMap(JsonXContent.jsonXContent, mappingJson, false), "", out);
        return out;
    }

    @SuppressWarnings("unchecked")
    private static void walk(Object node, String path, List<String> out) {
        if (node instanceof Map) {
            Map<String, Object> map = (Map<String, Object>) node;
            if ("knn_vector".equals(map.get("type"))) {
                String engine = engineOf(map);
                if (!"lucene".equals(engine)) {
                    out.add("field [" + (path.isEmpty() ? "?" : path) + "] uses engine [" + engine + "]");
                }
            }
            for (Map.Entry<String, Object> e : map.entrySet()) {
                String key = e.getKey();
                boolean structural = "properties".equals(key) || "fields".equals(key) || path.isEmpty() && "_doc".equals(key);
                walk(e.getValue(), structural ? path : path.isEmpty() ? key : path + "." + key, out);
            }
        } else if (node instanceof List) {
            for (Object item : (List<Object>) node) {
                walk(item, path, out);
            }
        }
    }

    @SuppressWarnings("unchecked")
    private static String engineOf(Map<String, Object> field) {
        if (field.get("model_id") != null) {
            return "faiss (trained model)";
        }
        Object method = field.get("method");
        if (method instanceof Map && ((Map<String, Object>) method).get("engine") != null) {
            return String.valueOf(((Map<String, Object>) method).get("engine"));
        }
        if (field.get("engine") != null) {
            return String.valueOf(field.get("engine"));
        }
        return "default (faiss or nmslib)";
    }

    private static String message(List<String> problems) {
        return "this managed OpenSearch node cannot run k-NN engines faiss or nmslib: its k-NN plugin has no native "
            + "libraries and such an index would crash the node (" + String.join("; ", problems) + "). Use the lucene "
            + "engine: \"method\": {\"name\": \"hnsw\", \"engine\": \"lucene\", \"space_type\": \"cosinesimil\"}, or "
            + "run a full OpenSearch distribution for faiss/nmslib";
    }

    private final class Guard implements ActionFilter {
        @Override
        public int order() {
            return Integer.MIN_VALUE;
        }

        @Override
        public <Request extends ActionRequest, Response extends ActionResponse> void apply(Task task, String action,
                Request request, ActionListener<Response> listener, ActionFilterChain<Request, Response> chain) {
            List<String> found;
            try {
                found = check(request);
            } catch (RuntimeException e) {
                found = List.of(); // an unreadable mapping is the mapper's to reject, with its own message
            }
            if (!found.isEmpty()) {
                listener.onFailure(new IllegalArgumentException(message(found)));
                return;
            }
            chain.proceed(task, action, request, listener);
        }

        private List<String> check(ActionRequest request) {
            if (request instanceof CreateIndexRequest) {
                CreateIndexRequest r = (CreateIndexRequest) request;
                return knnOff(r.settings()) ? List.of() : problems(r.mappings());
            }
            if (request instanceof PutMappingRequest) {
                PutMappingRequest r = (PutMappingRequest) request;
                if (r.getConcreteIndex() != null) {
                    return allFlat(new String[] {r.getConcreteIndex().getName()}) ? List.of() : problems(r.source());
                }
                return allFlat(r.indices()) ? List.of() : problems(r.source());
            }
            if (request instanceof PutIndexTemplateRequest) {
                PutIndexTemplateRequest r = (PutIndexTemplateRequest) request;
                return knnOff(r.settings()) ? List.of() : problems(r.mappings());
            }
            if (request instanceof PutComposableIndexTemplateAction.Request) {
                return template(((PutComposableIndexTemplateAction.Request) request).indexTemplate().template());
            }
            if (request instanceof PutComponentTemplateAction.Request) {
                return template(((PutComponentTemplateAction.Request) request).componentTemplate().template());
            }
            return List.of();
        }

        private List<String> template(Template template) {
            if (template == null || template.mappings() == null || knnOff(template.settings())) {
                return List.of();
            }
            return problems(template.mappings().string());
        }
    }
}
