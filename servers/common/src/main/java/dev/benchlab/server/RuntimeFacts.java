package dev.benchlab.server;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.web.server.WebServer;
import org.springframework.core.env.Environment;

/**
 * What GET /info answers: the server, the JVM and the request's thread as they are while running, so
 * benchlab can check that a setting it asked for (a JDK, a GC, a heap, virtual threads, a pool size)
 * really took effect. Called on the request's own thread.
 */
public final class RuntimeFacts {
    private RuntimeFacts() {
    }

    public static Map<String, Object> describe(WebServer webServer, Environment environment, Pool pool) {
        Map<String, Object> facts = new LinkedHashMap<>();
        String[] server = ServerVersion.detect(webServer);
        Runtime runtime = Runtime.getRuntime();
        boolean virtualEnabled = environment.getProperty("spring.threads.virtual.enabled", Boolean.class, false);
        facts.put("server", server[0]);
        facts.put("server_version", server[1]);
        facts.put("web_server_class", webServer.getClass().getSimpleName());
        facts.put("spring_boot_version", SpringBootVersion.getVersion());
        facts.put("java_version", System.getProperty("java.version"));
        facts.put("java_vendor", System.getProperty("java.vendor"));
        facts.put("java_vm", System.getProperty("java.vm.name") + " " + System.getProperty("java.vm.version"));
        facts.put("java_home", System.getProperty("java.home"));
        facts.put("jvm_args", ManagementFactory.getRuntimeMXBean().getInputArguments());
        facts.put("gc", collectors());
        facts.put("heap_max_bytes", runtime.maxMemory());
        facts.put("max_heap_bytes", runtime.maxMemory()); // the older name, kept for records that read it
        facts.put("available_processors", runtime.availableProcessors());
        facts.put("virtual", isVirtual(Thread.currentThread()));
        facts.put("thread_name", Thread.currentThread().getName());
        facts.put("pool_class", pool.className());
        facts.put("pool_max", pool.max());
        facts.put("spring_threads_virtual_enabled", virtualEnabled);
        facts.put("virtual_threads", Boolean.toString(virtualEnabled)); // the older name
        return facts;
    }

    static List<String> collectors() {
        List<String> names = new ArrayList<>();
        for (GarbageCollectorMXBean bean : ManagementFactory.getGarbageCollectorMXBeans()) {
            names.add(bean.getName());
        }
        return names;
    }

    /** Thread.isVirtual() where the JVM has it (21+); false on 17, where no thread is virtual. */
    static boolean isVirtual(Thread thread) {
        try {
            return (Boolean) Thread.class.getMethod("isVirtual").invoke(thread);
        } catch (NoSuchMethodException e) {
            return false;
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("Thread.isVirtual failed", e);
        }
    }
}
