package dev.benchlab.server;

import java.lang.reflect.Method;

import org.springframework.boot.web.server.WebServer;

/**
 * The request thread pool of a running Tomcat, Jetty or Undertow, read from the server's own objects
 * (not from Spring's properties), so a setting that did not take effect shows. Reflection keeps this
 * module free of a compile-time dependency on any one server.
 */
final class ServletPool {
    private ServletPool() {
    }

    static Pool of(WebServer webServer) {
        try {
            String type = webServer.getClass().getSimpleName();
            if (type.startsWith("Tomcat")) {
                return tomcat(webServer);
            }
            if (type.startsWith("Jetty")) {
                return jetty(webServer);
            }
            if (type.startsWith("Undertow")) {
                return undertow(webServer);
            }
        } catch (ReflectiveOperationException | RuntimeException e) {
            return new Pool("unreadable: " + e, null);
        }
        return Pool.UNKNOWN;
    }

    /** The connector's executor: Tomcat's ThreadPoolExecutor, or a VirtualThreadExecutor with no maximum. */
    private static Pool tomcat(WebServer webServer) throws ReflectiveOperationException {
        Object service = call(call(webServer, "getTomcat"), "getService");
        Object connector = ((Object[]) call(service, "findConnectors"))[0];
        Object executor = call(call(connector, "getProtocolHandler"), "getExecutor");
        Integer max = has(executor, "getMaximumPoolSize") ? (Integer) call(executor, "getMaximumPoolSize") : null;
        return new Pool(executor.getClass().getName(), max);
    }

    /**
     * Jetty's QueuedThreadPool and its maximum; with virtual threads the pool hands requests to its
     * virtual-thread executor, which is then the one named, with no maximum.
     */
    private static Pool jetty(WebServer webServer) throws ReflectiveOperationException {
        Object threads = call(call(webServer, "getServer"), "getThreadPool");
        Object virtual = has(threads, "getVirtualThreadsExecutor") ? call(threads, "getVirtualThreadsExecutor") : null;
        if (virtual != null) {
            return new Pool(virtual.getClass().getName(), null);
        }
        return new Pool(threads.getClass().getName(), (Integer) call(threads, "getMaxThreads"));
    }

    /**
     * Undertow's XNIO worker and its task pool's maximum (server.undertow.threads.worker); with virtual
     * threads the servlet deployment's own executor, which then runs the requests, with no maximum.
     */
    private static Pool undertow(WebServer webServer) throws ReflectiveOperationException {
        if (has(webServer, "getDeploymentManager")) {
            Object deployment = call(call(webServer, "getDeploymentManager"), "getDeployment");
            Object executor = call(call(deployment, "getDeploymentInfo"), "getExecutor");
            if (executor != null) {
                return new Pool(executor.getClass().getName(), null);
            }
        }
        Object worker = call(call(webServer, "getUndertow"), "getWorker");
        Object bean = call(worker, "getMXBean");
        return new Pool(worker.getClass().getName(), (Integer) publicCall(bean, "org.xnio.management.XnioWorkerMXBean",
                "getMaxWorkerPoolSize"));
    }

    private static boolean has(Object target, String method) {
        try {
            target.getClass().getMethod(method);
            return true;
        } catch (NoSuchMethodException e) {
            return false;
        }
    }

    private static Object call(Object target, String method) throws ReflectiveOperationException {
        Method m = target.getClass().getMethod(method);
        try {
            return m.invoke(target);
        } catch (IllegalAccessException e) { // a public method of a non-public class
            m.setAccessible(true);
            return m.invoke(target);
        }
    }

    /** A method called through the public interface that declares it. */
    private static Object publicCall(Object target, String type, String method) throws ReflectiveOperationException {
        return Class.forName(type, false, target.getClass().getClassLoader()).getMethod(method).invoke(target);
    }
}
